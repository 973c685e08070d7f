# client/local.mk: libinferd, inferctl, inferd-bench and the example program.

# libinferd: only the symbols marked INFERD_EXPORT in inferd.h are visible.
lib_LTLIBRARIES += client/libinferd.la
client_libinferd_la_SOURCES = client/libinferd.c client/inferd_ring.c client/inferd_alloc.c \
	client/libinferd_impl.h include/inferd.h include/inferd_wire.h
client_libinferd_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
# current:revision:age, libtool's rules: bump current on any interface change.
client_libinferd_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined

include_HEADERS = include/inferd.h include/inferd_wire.h
pkgconfig_DATA = client/inferd.pc
DISTCLEANFILES += client/inferd.pc
EXTRA_DIST += client/inferd.pc.in

# inferctl: health, models, model metadata and inference from a file, over shm or HTTP.
bin_PROGRAMS += client/inferctl
client_inferctl_SOURCES = client/inferctl.c client/inferctl_http.c client/inferctl.h \
	client/http_client.c client/http_client.h daemon/error.c daemon/error.h
client_inferctl_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
client_inferctl_LDADD = client/libinferd.la $(JANSSON_LIBS) -lm

# The example a C user can copy.
noinst_PROGRAMS += client/example
client_example_SOURCES = client/example.c
client_example_LDADD = client/libinferd.la

# --- benchmark tools (bench) ---
# inferd-bench: latency/throughput over shm or HTTP; --limits (CUDA builds) links the
# daemon's core library for the device layer and measures the device in-process.
bin_PROGRAMS += client/inferd-bench
client_inferd_bench_SOURCES = client/inferd-bench.c client/bench.h client/bench_hist.c \
	client/http_client.c client/http_client.h client/bench_load_http.c client/bench_load_shm.c \
	client/bench_report.c client/bench_engine.c
client_inferd_bench_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
# The core library gives --engine (and --limits) the device layer and the model loader.
client_inferd_bench_LDADD = client/libinferd.la $(INFERD_CORE_LIBS)
if HAVE_CUDA
client_inferd_bench_SOURCES += client/bench_limits.c
endif
# The bare libmicrohttpd + jansson server DESIGN §8's HTTP row is measured against.
noinst_PROGRAMS += client/bench-http-baseline
client_bench_http_baseline_SOURCES = client/bench-http-baseline.c
client_bench_http_baseline_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS)
client_bench_http_baseline_LDADD = $(MHD_LIBS) $(JANSSON_LIBS)
# The sweeps, the PyTorch peers, wrk's script, the summary and the plots.
EXTRA_DIST += client/bench/common.sh client/bench/run-cpu.sh client/bench/run-gpu.sh \
	client/bench/make_models.py client/bench/torch_peer.py client/bench/torch_http_server.py \
	client/bench/summarize.py client/bench/plot.py client/bench/wrk-post.lua
EXTRA_DIST += client/bench/onnx_peer.py
