# client/local.mk: what a user of inferd runs — the library (lib/), the command-line
# tools (tools/), the benchmarks (bench/) and the example (examples/).  None of these
# sees daemon/: they include include/ and their own headers, except the non-installed
# inferd-bench-engine, which links the daemon's core on purpose.

# --- lib: libinferd; only the symbols marked INFERD_EXPORT in inferd.h are visible. ---
lib_LTLIBRARIES += client/lib/libinferd.la
client_lib_libinferd_la_SOURCES = client/lib/libinferd.c client/lib/inferd_ring.c \
	client/lib/inferd_wait_engine.c client/lib/inferd_async.c client/lib/inferd_reconnect.c \
	client/lib/inferd_alloc.c client/lib/inferd_error.c client/lib/inferd_tensors.c client/lib/inferd_output_dims.c \
	client/lib/inferd_requests.c client/lib/inferd_conn.c client/lib/inferd_models.c \
	client/lib/libinferd_impl.h \
	include/inferd.h include/inferd_wire.h include/inferd_outcome.h
client_lib_libinferd_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden -pthread
client_lib_libinferd_la_LIBADD = $(PTHREAD_LIBS)
# current:revision:age, libtool's rules: bump current on any interface change.
client_lib_libinferd_la_LDFLAGS = $(AM_LDFLAGS) -version-info 4:0:4 -no-undefined
# Relinked when the prefix changes (make install prefix=DIR): libtool records libdir in it.
EXTRA_client_lib_libinferd_la_DEPENDENCIES = inferd_paths.h

include_HEADERS = include/inferd.h include/inferd_outcome.h
noinst_HEADERS += include/inferd_wire.h
pkgconfig_DATA = client/lib/inferd.pc
CLEANFILES += client/lib/inferd.pc
# Made here rather than by configure so that it follows `make install prefix=DIR`.  Libs carries
# an rpath unless libdir is one the dynamic loader searches by itself (/lib, /usr/lib and their
# multiarch and lib64 forms): a program built with `pkg-config --libs inferd` against a prefix
# such as /usr/local or /opt/inferd then runs with no LD_LIBRARY_PATH and no ldconfig step, as
# libtool's own rpath already makes inferctl run; a distribution's /usr/lib gets none.
client/lib/inferd.pc: $(srcdir)/client/lib/inferd.pc.in inferd_paths.h
	@$(MKDIR_P) client/lib
	$(AM_V_GEN)case '$(libdir)' in \
	/lib|/usr/lib|/lib64|/usr/lib64|/lib/*-linux-*|/usr/lib/*-linux-*) rpath= ;; \
	*) rpath='-Wl,-rpath,$${libdir} ' ;; esac; \
	sed -e 's|@prefix[@]|$(prefix)|g' -e 's|@exec_prefix[@]|$(exec_prefix)|g' \
		-e 's|@libdir[@]|$(libdir)|g' -e 's|@includedir[@]|$(includedir)|g' \
		-e 's|@VERSION[@]|$(VERSION)|g' -e "s|@RPATH[@]|$$rpath|g" \
		$(srcdir)/client/lib/inferd.pc.in >$@.tmp && mv $@.tmp $@
EXTRA_DIST += client/lib/inferd.pc.in

# --- tools: inferctl (health, models, metadata, inference over shm or HTTP) ---
TOOLS_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/client/tools
TOOLS_HTTP = client/tools/http_client.c client/tools/http_client.h \
	common/error.c common/error.h
bin_PROGRAMS += client/tools/inferctl
client_tools_inferctl_SOURCES = client/tools/inferctl.c client/tools/inferctl_http.c \
	client/tools/inferctl_model.c client/tools/inferctl_tensors.c \
	client/tools/inferctl.h $(TOOLS_HTTP)
client_tools_inferctl_CPPFLAGS = $(TOOLS_CPPFLAGS)
client_tools_inferctl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
client_tools_inferctl_LDADD = client/lib/libinferd.la $(JANSSON_LIBS) -lm

# --- examples: the program a C user can copy ---
noinst_PROGRAMS += client/examples/example
client_examples_example_SOURCES = client/examples/example.c
client_examples_example_LDADD = client/lib/libinferd.la
noinst_PROGRAMS += client/examples/threads
client_examples_threads_SOURCES = client/examples/threads.c
client_examples_threads_CFLAGS = $(AM_CFLAGS) -pthread
client_examples_threads_LDADD = client/lib/libinferd.la $(PTHREAD_LIBS)

# --- bench: inferd-bench, latency/throughput over shm or HTTP (libinferd + jansson only) ---
BENCH_CPPFLAGS = $(TOOLS_CPPFLAGS) -I$(top_srcdir)/client/bench
bin_PROGRAMS += client/bench/inferd-bench
client_bench_inferd_bench_SOURCES = client/bench/inferd-bench.c client/bench/bench.h \
	client/bench/bench_args.c client/bench/bench_hist.c client/bench/bench_load_http.c \
	client/bench/bench_load_shm.c client/bench/bench_report.c client/bench/bench_run.c \
	client/bench/bench_http_get.c client/bench/bench_http_get.h $(TOOLS_HTTP)
client_bench_inferd_bench_CPPFLAGS = $(BENCH_CPPFLAGS)
client_bench_inferd_bench_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
client_bench_inferd_bench_LDADD = client/lib/libinferd.la $(JANSSON_LIBS) -lm

# inferd-bench-mix: mixed-length traffic to a transformer encoder (one sequence per request, a
# length drawn per request) over HTTP binary tensors or shm, with --check against each request alone.
bin_PROGRAMS += client/bench/inferd-bench-mix
client_bench_inferd_bench_mix_SOURCES = client/bench/inferd-bench-mix.c client/bench/bench_mix.h \
	client/bench/bench_mix_model.c client/bench/bench_mix_data.c client/bench/bench_mix_http.c \
	client/bench/bench_mix_shm.c client/bench/bench_mix_metrics.c client/bench/bench_mix_report.c \
	client/bench/bench.h client/bench/bench_args.c client/bench/bench_hist.c \
	client/bench/bench_http_get.c client/bench/bench_http_get.h $(TOOLS_HTTP)
client_bench_inferd_bench_mix_CPPFLAGS = $(BENCH_CPPFLAGS)
client_bench_inferd_bench_mix_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS) -pthread
client_bench_inferd_bench_mix_LDADD = client/lib/libinferd.la $(JANSSON_LIBS) $(PTHREAD_LIBS) -lm
# Its PyTorch peer: BertModel on batches of 16 of the same length distribution, padded to each batch's longest.
EXTRA_DIST += client/bench/torch_mixed_peer.py

# inferd-bench-engine (not installed): the backend alone (--engine) and, in CUDA builds,
# the device's limits (--limits); it links the daemon's core library, so it sees daemon/.
noinst_PROGRAMS += client/bench/inferd-bench-engine
client_bench_inferd_bench_engine_SOURCES = client/bench/inferd-bench-engine.c client/bench/bench.h \
	client/bench/bench_args.c client/bench/bench_hist.c client/bench/bench_report.c \
	client/bench/bench_engine.c client/bench/bench_futex.c \
	client/bench/bench_profile.c client/bench/bench_profile.h
if HAVE_CUDA
client_bench_inferd_bench_engine_SOURCES += client/bench/bench_limits.c
endif
client_bench_inferd_bench_engine_CPPFLAGS = $(BENCH_CPPFLAGS) $(DAEMON_CPPFLAGS)
client_bench_inferd_bench_engine_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
client_bench_inferd_bench_engine_LDADD = $(INFERD_CORE_LIBS)

# The bare libmicrohttpd + jansson server inferd's HTTP front end is measured against.
noinst_PROGRAMS += client/bench/bench-http-baseline
client_bench_bench_http_baseline_SOURCES = client/bench/bench-http-baseline.c
client_bench_bench_http_baseline_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS)
client_bench_bench_http_baseline_LDADD = $(MHD_LIBS) $(JANSSON_LIBS)
# The sweeps, the PyTorch peers, wrk's script, the summary and the plots.
EXTRA_DIST += client/bench/common.sh client/bench/run-cpu.sh client/bench/run-gpu.sh \
	client/bench/make_models.py client/bench/http_shm_ingest.py client/bench/torch_peer.py client/bench/torch_http_server.py \
	client/bench/summarize.py client/bench/plot.py client/bench/wrk-post.lua client/bench/targets.py
EXTRA_DIST += client/bench/wrk-post-binary.lua client/bench/make_binary_body.py
EXTRA_DIST += client/bench/onnx_peer.py client/bench/gpu_load_times.sh client/bench/gpu_suite_loads.py

# Not installed: the tensor data codec's decode/encode MB/s beside jansson and strtof, one run
# (client/bench/bench_tensor_text docs/examples/fashion-request.json [reps]).
noinst_PROGRAMS += client/bench/bench_tensor_text
client_bench_bench_tensor_text_SOURCES = client/bench/bench_tensor_text.c
client_bench_bench_tensor_text_CPPFLAGS = $(DAEMON_CPPFLAGS)
client_bench_bench_tensor_text_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
client_bench_bench_tensor_text_LDADD = $(INFERD_CORE_LIBS)
EXTRA_DIST += client/bench/gpu_profile_models.py client/bench/gpu_torch_profile.py client/bench/gpu_instances.sh
EXTRA_DIST += client/bench/gpu_checks.sh client/bench/gpu_check_common.py client/bench/gpu_check_encoders.py \
	client/bench/gpu_check_resnet_fp16.py client/bench/gpu_check_fashion.py
