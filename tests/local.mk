# tests/local.mk: all behind make check.  unit/ (C programs on the daemon's modules),
# integration/ (scripts driving a real daemon), fuzz/ (the codec's fuzz target),
# helpers/ (shared test code and the client programs the scripts drive), data/.

TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	PYTHON3='$(PYTHON3)'; export PYTHON3; \
	ASAN_OPTIONS="$${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1}"; export ASAN_OPTIONS; \
	UBSAN_OPTIONS="$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"; export UBSAN_OPTIONS;

TEST_COMMON = tests/helpers/test_util.c tests/helpers/test_util.h
# The seed-corpus driver the fuzz targets run in make check.
FUZZ_CORPUS = tests/helpers/fuzz_corpus.c tests/helpers/fuzz_corpus.h
TEST_LDADD = $(INFERD_CORE_LIBS)
TEST_FASHION = tests/unit/test_fashion.c tests/helpers/fashion_data.c tests/helpers/fashion_data.h \
	$(TEST_COMMON)
# The daemon's tests see daemon/ and the helpers; nothing else in tests/ does.
TEST_CPPFLAGS = $(DAEMON_CPPFLAGS) -I$(top_srcdir)/tests/helpers
# The engine tests are built twice: on the CPU backend, and on CUDA (they skip without a GPU).
TEST_CUDA_CPPFLAGS = $(TEST_CPPFLAGS) -DTEST_DEVICE='"cuda:0"'

# --- engine tests (lead) ---
ENGINE_TESTS = tests/unit/test_ops tests/unit/test_ops_cuda tests/unit/test_model_load tests/unit/test_model_load_cuda \
	tests/unit/test_fashion tests/unit/test_fashion_cuda tests/unit/test_fashion_accuracy tests/unit/test_fashion_accuracy_cuda \
	tests/unit/test_batcher tests/unit/test_batcher_cuda
check_PROGRAMS += $(ENGINE_TESTS)
TESTS += $(ENGINE_TESTS)
tests_unit_test_ops_SOURCES = tests/unit/test_ops.c $(TEST_COMMON)
tests_unit_test_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_ops_LDADD = $(TEST_LDADD)
tests_unit_test_ops_cuda_SOURCES = $(tests_unit_test_ops_SOURCES)
tests_unit_test_ops_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_ops_cuda_LDADD = $(TEST_LDADD)
tests_unit_test_model_load_SOURCES = tests/unit/test_model_load.c tests/helpers/onnx_build.c tests/helpers/onnx_build.h $(TEST_COMMON)
tests_unit_test_model_load_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_model_load_LDADD = $(TEST_LDADD)
tests_unit_test_model_load_cuda_SOURCES = $(tests_unit_test_model_load_SOURCES)
tests_unit_test_model_load_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_model_load_cuda_LDADD = $(TEST_LDADD)
tests_unit_test_fashion_SOURCES = $(TEST_FASHION)
tests_unit_test_fashion_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_fashion_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_fashion_LDADD = $(TEST_LDADD)
tests_unit_test_fashion_cuda_SOURCES = $(TEST_FASHION)
tests_unit_test_fashion_cuda_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_fashion_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_fashion_cuda_LDADD = $(TEST_LDADD)
tests_unit_test_fashion_accuracy_SOURCES = $(TEST_FASHION)
tests_unit_test_fashion_accuracy_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_fashion_accuracy_CPPFLAGS = $(TEST_CPPFLAGS) -DFASHION_ACCURACY
tests_unit_test_fashion_accuracy_LDADD = $(TEST_LDADD)
tests_unit_test_fashion_accuracy_cuda_SOURCES = $(TEST_FASHION)
tests_unit_test_fashion_accuracy_cuda_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_fashion_accuracy_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS) -DFASHION_ACCURACY
tests_unit_test_fashion_accuracy_cuda_LDADD = $(TEST_LDADD)
tests_unit_test_batcher_SOURCES = tests/unit/test_batcher.c tests/helpers/onnx_build.c tests/helpers/onnx_build.h $(TEST_COMMON)
tests_unit_test_batcher_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_batcher_LDADD = $(TEST_LDADD)
tests_unit_test_batcher_cuda_SOURCES = $(tests_unit_test_batcher_SOURCES)
tests_unit_test_batcher_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_batcher_cuda_LDADD = $(TEST_LDADD)
EXTRA_DIST += tests/data

# The batched-copy op (gather/scatter through mapped host memory) against memcpy, on both backends.
COPY_BATCH_TESTS = tests/unit/test_copy_batch tests/unit/test_copy_batch_cuda
check_PROGRAMS += $(COPY_BATCH_TESTS)
TESTS += $(COPY_BATCH_TESTS)
tests_unit_test_copy_batch_SOURCES = tests/unit/test_copy_batch.c $(TEST_COMMON)
tests_unit_test_copy_batch_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_copy_batch_LDADD = $(TEST_LDADD)
tests_unit_test_copy_batch_cuda_SOURCES = $(tests_unit_test_copy_batch_SOURCES)
tests_unit_test_copy_batch_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_copy_batch_cuda_LDADD = $(TEST_LDADD)

# --- daemon lifecycle tests (main) ---
dist_check_SCRIPTS += tests/integration/test_config.sh tests/integration/config_service.sh tests/integration/test_lifecycle.sh
TESTS += tests/integration/test_config.sh tests/integration/config_service.sh tests/integration/test_lifecycle.sh
EXTRA_DIST += tests/helpers/lifecycle_driver.py

# --- HTTP tests (http) ---
# The KServe codec and the staging pool as units; the codec's fuzz target run over its corpus
# (every file, every truncation, fixed mutations); a real daemon driven over HTTP.
HTTP_C_TESTS = tests/unit/test_kserve tests/unit/test_pinned_pool tests/fuzz/fuzz_kserve \
	tests/unit/test_kserve_multi tests/unit/test_kserve_bytes
check_PROGRAMS += $(HTTP_C_TESTS)
TESTS += $(HTTP_C_TESTS) tests/integration/test_http.sh
tests_unit_test_kserve_SOURCES = tests/unit/test_kserve.c tests/helpers/kserve_fixture.h $(TEST_COMMON)
tests_unit_test_kserve_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_kserve_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_kserve_LDADD = $(TEST_LDADD)
tests_unit_test_kserve_multi_SOURCES = tests/unit/test_kserve_multi.c $(TEST_COMMON)
tests_unit_test_kserve_multi_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_kserve_multi_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_kserve_multi_LDADD = $(TEST_LDADD)
tests_unit_test_kserve_bytes_SOURCES = tests/unit/test_kserve_bytes.c $(TEST_COMMON)
tests_unit_test_kserve_bytes_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_kserve_bytes_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_kserve_bytes_LDADD = $(TEST_LDADD)
tests_unit_test_pinned_pool_SOURCES = tests/unit/test_pinned_pool.c $(TEST_COMMON)
tests_unit_test_pinned_pool_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_pinned_pool_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_kserve_SOURCES = tests/fuzz/fuzz_kserve.c tests/helpers/kserve_fixture.h $(FUZZ_CORPUS)
tests_fuzz_fuzz_kserve_CPPFLAGS = $(TEST_CPPFLAGS)
tests_fuzz_fuzz_kserve_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_kserve_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += tests/integration/test_http.sh
EXTRA_DIST += tests/helpers/http_client.py tests/helpers/triton_repository.py tests/helpers/triton_examples.py \
	tests/helpers/bytes_check.py

# --- tensor data codec (tensor-text) ---
# The codec against strtof and independent references; its fuzz target run over its corpus.
TENSOR_TEXT_TESTS = tests/unit/test_tensor_text tests/fuzz/fuzz_tensor_text
check_PROGRAMS += $(TENSOR_TEXT_TESTS)
TESTS += $(TENSOR_TEXT_TESTS)
tests_unit_test_tensor_text_SOURCES = tests/unit/test_tensor_text.c $(TEST_COMMON)
tests_unit_test_tensor_text_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_tensor_text_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_tensor_text_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_tensor_text_SOURCES = tests/fuzz/fuzz_tensor_text.c $(FUZZ_CORPUS)
tests_fuzz_fuzz_tensor_text_CPPFLAGS = $(TEST_CPPFLAGS)
tests_fuzz_fuzz_tensor_text_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_tensor_text_LDADD = $(TEST_LDADD)

# libFuzzer build (clang with libFuzzer; make fuzz runs it too, see "fuzzing" below):
#   make fuzz-tensor-text && tests/fuzz/fuzz_tensor_text_libfuzzer -max_total_time=60 $(srcdir)/tests/data/tensor-text-corpus
TENSOR_TEXT_FUZZ_SRC = $(srcdir)/tests/fuzz/fuzz_tensor_text.c $(srcdir)/common/error.c
fuzz-tensor-text: tests/fuzz/fuzz_tensor_text_libfuzzer
tests/fuzz/fuzz_tensor_text_libfuzzer: $(TENSOR_TEXT_FUZZ_SRC) $(srcdir)/daemon/tensor_text.cc \
		$(srcdir)/daemon/tensor_text.h config.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -DFUZZ_LIBFUZZER $(DAEMON_CPPFLAGS) $(JANSSON_CFLAGS) \
		-c -o tests/fuzz/fuzz_tensor_text_libfuzzer-main.o \
		$(srcdir)/tests/fuzz/fuzz_tensor_text.c
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(DAEMON_CPPFLAGS) -c -o tests/fuzz/fuzz_tensor_text_libfuzzer-error.o \
		$(srcdir)/common/error.c
	$(AM_V_CXX)$(FUZZ_CC)++ $(FUZZ_CFLAGS) -fsanitize=fuzzer -std=c++17 -fno-exceptions $(DAEMON_CPPFLAGS) \
		-c -o tests/fuzz/fuzz_tensor_text_libfuzzer-codec.o $(srcdir)/daemon/tensor_text.cc
	$(AM_V_CCLD)$(FUZZ_CC)++ $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ tests/fuzz/fuzz_tensor_text_libfuzzer-main.o \
		tests/fuzz/fuzz_tensor_text_libfuzzer-error.o tests/fuzz/fuzz_tensor_text_libfuzzer-codec.o $(JANSSON_LIBS)
CLEANFILES += tests/fuzz/fuzz_tensor_text_libfuzzer tests/fuzz/fuzz_tensor_text_libfuzzer-*.o
.PHONY: fuzz-tensor-text

# --- Triton shared memory and HTTP encodings (triton-shm) ---
# The region registry as a unit; tritonclient (PyPI) and the HTTP extras against a real daemon.
check_PROGRAMS += tests/unit/test_shm_registry
TRITON_TESTS = tests/integration/test_http_extras.sh tests/integration/test_triton_client.sh \
	tests/integration/test_perf_analyzer.sh tests/integration/test_http_staging.sh \
	tests/integration/test_triton_repository.sh tests/integration/test_triton_examples.sh \
	tests/integration/test_bytes.sh
TESTS += tests/unit/test_shm_registry $(TRITON_TESTS)
# config.pbtxt's reader over its seed corpus (every file, prefix and fixed mutations).
check_PROGRAMS += tests/fuzz/fuzz_model_pbtxt
TESTS += tests/fuzz/fuzz_model_pbtxt
tests_fuzz_fuzz_model_pbtxt_SOURCES = tests/fuzz/fuzz_model_pbtxt.c $(FUZZ_CORPUS)
tests_fuzz_fuzz_model_pbtxt_CPPFLAGS = $(TEST_CPPFLAGS)
tests_fuzz_fuzz_model_pbtxt_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_fuzz_model_pbtxt_LDADD = $(TEST_LDADD)
tests_unit_test_shm_registry_SOURCES = tests/unit/test_shm_registry.c $(TEST_COMMON)
tests_unit_test_shm_registry_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_shm_registry_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_shm_registry_LDADD = $(TEST_LDADD)
check_PROGRAMS += tests/unit/test_kserve_source
TESTS += tests/unit/test_kserve_source
tests_unit_test_kserve_source_SOURCES = tests/unit/test_kserve_source.c $(TEST_COMMON)
tests_unit_test_kserve_source_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_kserve_source_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_kserve_source_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += $(TRITON_TESTS)
EXTRA_DIST += tests/helpers/triton_client.py tests/helpers/test_triton_lib.sh tests/helpers/cuda_shm_client.py \
	tests/helpers/staging_client.py

# --- shared-memory IPC tests (ipc) ---
# The clients the scripts drive: one through libinferd, one speaking the wire by hand.
check_PROGRAMS += tests/helpers/ipc_client tests/helpers/ipc_hostile
tests_helpers_ipc_client_SOURCES = tests/helpers/ipc_client.c
tests_helpers_ipc_client_LDADD = client/lib/libinferd.la -lm
tests_helpers_ipc_hostile_SOURCES = tests/helpers/ipc_hostile.c include/inferd_wire.h
tests_helpers_ipc_hostile_LDADD = -lpthread -lm
IPC_TESTS = tests/integration/test_ipc_compare.sh tests/integration/test_ipc_load.sh tests/integration/test_ipc_kill.sh \
	tests/integration/test_ipc_hostile.sh tests/integration/test_shutdown_drain.sh tests/integration/test_attacks.sh \
	tests/integration/test_faults.sh tests/integration/test_shutdown_loads.sh \
	tests/integration/test_startup_http.sh tests/integration/test_startup_ipc.sh tests/integration/test_model_file_errors.sh \
	tests/integration/test_metrics_latency.sh
TESTS += $(IPC_TESTS)
dist_check_SCRIPTS += $(IPC_TESTS)
# inferd-bench-mix: mixed-length traffic to an exported encoder over HTTP and shm, with --check.
TESTS += tests/integration/test_bench_mix.sh
dist_check_SCRIPTS += tests/integration/test_bench_mix.sh
# Constant folding: a BERT export's plans fold little beyond its parameters; answers against onnxruntime.
TESTS += tests/integration/test_fold_growth.sh
dist_check_SCRIPTS += tests/integration/test_fold_growth.sh
EXTRA_DIST += tests/helpers/test_ipc_lib.sh tests/helpers/attack_http.py tests/soak.sh

# --- one libinferd connection shared by threads; cancel; the threaded example (libv1) ---
check_PROGRAMS += tests/helpers/ipc_threads
tests_helpers_ipc_threads_SOURCES = tests/helpers/ipc_threads.c
tests_helpers_ipc_threads_CFLAGS = $(AM_CFLAGS) -pthread
tests_helpers_ipc_threads_LDADD = client/lib/libinferd.la -lm $(PTHREAD_LIBS)
TESTS += tests/integration/test_ipc_threads.sh
dist_check_SCRIPTS += tests/integration/test_ipc_threads.sh
# The shm tests above once per copy_mode (dma, mapped).
TESTS += tests/integration/test_ipc_copy_modes.sh
dist_check_SCRIPTS += tests/integration/test_ipc_copy_modes.sh

# --- GPU gauges of /metrics: metrics_gpu.c without NVML and against a stand-in NVML library the test builds ---
check_PROGRAMS += tests/unit/test_metrics_gpu
TESTS += tests/unit/test_metrics_gpu
tests_unit_test_metrics_gpu_SOURCES = tests/unit/test_metrics_gpu.c $(TEST_COMMON)
tests_unit_test_metrics_gpu_CPPFLAGS = $(TEST_CPPFLAGS) -DFAKE_NVML='"$(abs_top_builddir)/tests/helpers/libfake_nvml.so"'
tests_unit_test_metrics_gpu_LDADD = $(TEST_LDADD)
EXTRA_tests_unit_test_metrics_gpu_DEPENDENCIES = tests/helpers/libfake_nvml.so
# A plain shared object (not a libtool library): the test dlopens it by path, as the daemon does NVML.
tests/helpers/libfake_nvml.so: $(srcdir)/tests/helpers/fake_nvml.c
	@$(MKDIR_P) tests/helpers
	$(AM_V_CCLD)$(CC) -std=gnu11 -Wall -Wextra -shared -fPIC -o $@ $(srcdir)/tests/helpers/fake_nvml.c
CLEANFILES += tests/helpers/libfake_nvml.so
EXTRA_DIST += tests/helpers/fake_nvml.c

# --- the compile cache's file (compile_cache.c): round trip, damage refused whole, identity, size bound; its reader's fuzz target ---
check_PROGRAMS += tests/unit/test_compile_cache tests/fuzz/fuzz_compile_cache
TESTS += tests/unit/test_compile_cache tests/fuzz/fuzz_compile_cache
tests_unit_test_compile_cache_SOURCES = tests/unit/test_compile_cache.c $(TEST_COMMON)
tests_unit_test_compile_cache_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_compile_cache_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_compile_cache_SOURCES = tests/fuzz/fuzz_compile_cache.c $(FUZZ_CORPUS)
tests_fuzz_fuzz_compile_cache_CPPFLAGS = $(TEST_CPPFLAGS)
tests_fuzz_fuzz_compile_cache_LDADD = $(TEST_LDADD)
# The cache on a GPU: cold start, warm start, a damaged file (skips on the CPU).
TESTS += tests/integration/test_compile_cache.sh
dist_check_SCRIPTS += tests/integration/test_compile_cache.sh

# --- model lifecycle, live: reloads under load, versions, control modes, unload under clients ---
check_PROGRAMS += tests/unit/test_device_set
tests_unit_test_device_set_SOURCES = tests/unit/test_device_set.c $(TEST_COMMON)
tests_unit_test_device_set_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_device_set_LDADD = $(TEST_LDADD)
TESTS += tests/unit/test_device_set
check_PROGRAMS += tests/unit/test_repository
tests_unit_test_repository_SOURCES = tests/unit/test_repository.c $(TEST_COMMON)
tests_unit_test_repository_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_repository_LDADD = $(TEST_LDADD)
TESTS += tests/unit/test_repository tests/integration/test_model_lifecycle.sh
dist_check_SCRIPTS += tests/integration/test_model_lifecycle.sh
# Instances spread over two GPUs (skips with fewer).
TESTS += tests/integration/test_multi_gpu.sh
dist_check_SCRIPTS += tests/integration/test_multi_gpu.sh
# fp16 answers under mixed-length load equal to the requests alone (batch-invariant GEMMs); skips without a GPU.
TESTS += tests/integration/test_batch_invariant_gpu.sh
dist_check_SCRIPTS += tests/integration/test_batch_invariant_gpu.sh
# The device memory report of a loaded version: load line, /stats and /metrics against the weights file.
TESTS += tests/integration/test_model_memory.sh
dist_check_SCRIPTS += tests/integration/test_model_memory.sh
# The report's counting in model_load and model_exec_create/capture, on the CPU and (skipped without a GPU) CUDA.
check_PROGRAMS += tests/unit/test_model_memory tests/unit/test_model_memory_cuda
TESTS += tests/unit/test_model_memory tests/unit/test_model_memory_cuda
tests_unit_test_model_memory_SOURCES = tests/unit/test_model_memory.c $(TEST_COMMON)
tests_unit_test_model_memory_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_model_memory_LDADD = $(TEST_LDADD)
tests_unit_test_model_memory_cuda_SOURCES = $(tests_unit_test_model_memory_SOURCES)
tests_unit_test_model_memory_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_model_memory_cuda_LDADD = $(TEST_LDADD)

# --- several named tensors per model (multitensor) ---
# An ONNX model of two inputs and three outputs through HTTP JSON, binary and shm (inferctl).
TESTS += tests/integration/test_multi_tensor.sh
dist_check_SCRIPTS += tests/integration/test_multi_tensor.sh
TESTS += tests/integration/test_static_batch.sh
dist_check_SCRIPTS += tests/integration/test_static_batch.sh
EXTRA_DIST += tests/helpers/make_multi_onnx.py tests/helpers/multi_client.py tests/helpers/static_batch.py
# Output dims the inputs' dims compute (a strided Conv, a Reshape's guard) over shm: OUTPUT_DIMS through
# inferctl, libinferd (ipc_client outdims) and the Python client, against onnxruntime.
TESTS += tests/integration/test_shm_output_dims.sh
dist_check_SCRIPTS += tests/integration/test_shm_output_dims.sh
EXTRA_DIST += tests/helpers/make_conv_dims_onnx.py tests/helpers/shm_output_dims.py

# --- output shapes exact per request (shape-fuzz) ---
# Generated graphs with variable dims (strided conv/pool, Resize, Slice clamping, Reshape, shape arithmetic)
# and two exported encoders, over HTTP JSON, binary and shm, against onnxruntime (and PyTorch).
TESTS += tests/integration/test_shape_fuzz.sh
dist_check_SCRIPTS += tests/integration/test_shape_fuzz.sh
EXTRA_DIST += tests/helpers/shape_fuzz.py tests/helpers/shape_encoder.py

# --- batching across lengths: masked encoders padded to buckets, over HTTP and shm, against onnxruntime ---
TESTS += tests/integration/test_batch_lengths.sh
dist_check_SCRIPTS += tests/integration/test_batch_lengths.sh
# The load checks' verdicts remembered for the same bytes (model_verdict.c).
TESTS += tests/integration/test_load_verdicts.sh
dist_check_SCRIPTS += tests/integration/test_load_verdicts.sh
EXTRA_DIST += tests/helpers/masked_encoder.py

# --- bench smoke test (bench) ---
# inferd-bench, inferd-bench-engine and bench-http-baseline against a private CPU daemon.
TESTS += tests/integration/test_bench.sh
dist_check_SCRIPTS += tests/integration/test_bench.sh

# --- ONNX decoder (onnx-decode) ---
# Models from tests/helpers/make_onnx_cases.py checked against the onnx package's reading of them, every
# truncation, peak RSS of a ~200 MB model; the decoder's fuzz target run over its seed corpus.
check_PROGRAMS += tests/unit/test_onnx_decode tests/fuzz/fuzz_onnx
TESTS += tests/unit/test_onnx_decode.sh tests/fuzz/fuzz_onnx
dist_check_SCRIPTS += tests/unit/test_onnx_decode.sh
EXTRA_DIST += tests/helpers/make_onnx_cases.py
tests_unit_test_onnx_decode_SOURCES = tests/unit/test_onnx_decode.c $(TEST_COMMON)
tests_unit_test_onnx_decode_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_onnx_decode_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_onnx_decode_LDADD = $(TEST_LDADD)
tests_fuzz_fuzz_onnx_SOURCES = tests/fuzz/fuzz_onnx.c $(FUZZ_CORPUS)
tests_fuzz_fuzz_onnx_CPPFLAGS = $(TEST_CPPFLAGS)
tests_fuzz_fuzz_onnx_LDADD = $(TEST_LDADD)

# --- graph passes (graph-passes) ---
# Fusions checked against a double-precision reference evaluator; the memory plan's invariants.
GRAPH_PASS_TESTS = tests/unit/test_graph_fuse tests/unit/test_graph_plan
check_PROGRAMS += $(GRAPH_PASS_TESTS)
TESTS += $(GRAPH_PASS_TESTS)
GRAPH_TEST_COMMON = tests/helpers/graph_test_util.c tests/helpers/graph_test_eval.c tests/helpers/graph_test_util.h \
	$(TEST_COMMON)
tests_unit_test_graph_fuse_SOURCES = tests/unit/test_graph_fuse.c $(GRAPH_TEST_COMMON)
tests_unit_test_graph_fuse_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_graph_fuse_LDADD = $(TEST_LDADD)
tests_unit_test_graph_plan_SOURCES = tests/unit/test_graph_plan.c $(GRAPH_TEST_COMMON)
tests_unit_test_graph_plan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_graph_plan_LDADD = $(TEST_LDADD)

# --- deployment and packaging tests (packaging) ---
# nginx in front of three daemons (one killed mid-run); conf/deploy checked without a cluster;
# the Debian packages built, linted and (as root in CI) installed and used.
DEPLOY_TESTS = tests/integration/test_deploy_nginx.sh tests/integration/test_deploy_yaml.sh \
	tests/integration/test_debian_package.sh
TESTS += $(DEPLOY_TESTS)
dist_check_SCRIPTS += $(DEPLOY_TESTS)
EXTRA_DIST += tests/helpers/deploy_load.py tests/helpers/deploy_validate.py

# --- fuzzing (reliability) ---
# make fuzz: every libFuzzer target below for FUZZ_SECONDS (default 60) each, under ASan+UBSan (needs
# clang and libclang-rt-14-dev).  Target NAME is tests/fuzz/fuzz_NAME.c, seeded from the committed
# tests/data/NAME-corpus; inputs it finds go to a scratch directory, but a crash's input is written
# into the corpus directory (crash-*, leak-*, timeout-*), which makes it a regression case once
# committed.  A crash fails.  To add a target: a word in FUZZ_TARGETS, the .c file and its corpus.
# One target by hand: make tests/fuzz/fuzz_http_libfuzzer && tests/fuzz/fuzz_http_libfuzzer CORPUS_DIR
# Every target links the daemon's core compiled with coverage (tests/fuzz/libfuzzcore.a).
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_TARGETS = kserve onnx safetensors model_json ipc_ring ipc_control http tensor_text model_pbtxt compile_cache
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -g -O1 $(FUZZ_SAN)
# Absolute paths: the core is compiled from inside tests/fuzz/core.
FUZZ_CPPFLAGS = $(DEFS) -I$(abs_top_builddir) -I$(abs_top_srcdir)/include -I$(abs_top_srcdir)/common -I$(abs_top_srcdir)/daemon \
	-I$(abs_top_srcdir)/daemon/backend -I$(abs_top_srcdir)/daemon/backend/cpu \
	-I$(abs_top_srcdir)/tests/helpers -DINFERD_SYSCONFDIR='"$(sysconfdir)/inferd"' -DINFERD_DATADIR='"$(pkgdatadir)"' \
	$(MHD_CFLAGS) $(JANSSON_CFLAGS) $(BLAS_CFLAGS) $(SYSTEMD_CFLAGS) \
	-DFUZZ_LIBFUZZER -DFUZZ_SRCDIR='"$(abs_top_srcdir)"'
# The core's own libraries, whatever they are, with the instrumented archive in its place.
FUZZ_LIBS = tests/fuzz/libfuzzcore.a $(filter-out daemon/libinferd_core.a daemon/libinferd_pbtxt.a,$(INFERD_CORE_LIBS)) \
	-lpthread
# Per-target libFuzzer options: the HTTP server's threads allocate between inputs, so leaks are
# left to the sanitizer build's tests there.
FUZZ_OPTS_http = -detect_leaks=0
FUZZ_CORE_SRC = $(filter %.c,$(daemon_libinferd_core_a_SOURCES))
FUZZ_CORE_CXX = $(filter %.cc,$(daemon_libinferd_core_a_SOURCES))
FUZZ_CORE_DEPS = $(addprefix $(srcdir)/,$(filter %.h,$(daemon_libinferd_core_a_SOURCES))) config.h

# config.pbtxt's reader is C++ with RTTI, linked by the C driver: without the C++ UBSan runtime, so no
# vptr or function-type checks there.
tests/fuzz/libfuzzcore.a: $(addprefix $(srcdir)/,$(FUZZ_CORE_SRC) $(FUZZ_CORE_CXX)) $(FUZZ_CORE_DEPS) \
		$(daemon_libinferd_core_a_LIBADD) $(srcdir)/daemon/model_pbtxt.cc daemon/model_pbtxt.pb.cc
	@rm -rf tests/fuzz/core && $(MKDIR_P) tests/fuzz/core
	$(AM_V_CC)cd tests/fuzz/core && $(FUZZ_CC) -std=gnu11 $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_CPPFLAGS) \
		-c $(addprefix $(abs_top_srcdir)/,$(FUZZ_CORE_SRC))
	$(AM_V_CXX)cd tests/fuzz/core && $(FUZZ_CC)++ -std=c++17 -fno-exceptions -fno-rtti $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link $(FUZZ_CPPFLAGS) -c $(addprefix $(abs_top_srcdir)/,$(FUZZ_CORE_CXX))
	$(AM_V_CXX)cd tests/fuzz/core && $(FUZZ_CC)++ -std=c++17 $(FUZZ_CFLAGS) -fno-sanitize=vptr,function \
		-fsanitize=fuzzer-no-link $(FUZZ_CPPFLAGS) -I$(abs_top_builddir)/daemon $(PROTOBUF_CFLAGS) \
		-c $(abs_top_srcdir)/daemon/model_pbtxt.cc $(abs_top_builddir)/daemon/model_pbtxt.pb.cc
	$(AM_V_AR)rm -f $@ && $(AR) rcs $@ tests/fuzz/core/*.o $(daemon_libinferd_core_a_LIBADD)
tests/fuzz/fuzz_%_libfuzzer: $(srcdir)/tests/fuzz/fuzz_%.c tests/fuzz/libfuzzcore.a
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_CPPFLAGS) -o $@ $< $(FUZZ_LIBS)

fuzz: $(FUZZ_TARGETS:%=tests/fuzz/fuzz_%_libfuzzer)
	@failed=; for t in $(FUZZ_TARGETS); do \
		corpus=$(srcdir)/tests/data/$$t-corpus; \
		[ -d $$corpus ] || corpus=$(srcdir)/tests/data/$$(echo $$t | tr _ -)-corpus; \
		scratch=tests/fuzz/$$t-scratch; \
		rm -rf $$scratch && $(MKDIR_P) $$scratch || exit 1; \
		eval opts=\"\$$FUZZ_OPTS_$$t\"; \
		echo "fuzz: $$t for $(FUZZ_SECONDS) s from $$corpus"; \
		ASAN_OPTIONS=protect_shadow_gap=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		tests/fuzz/fuzz_$${t}_libfuzzer -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 \
			-print_final_stats=1 -artifact_prefix=$$corpus/ $$opts $$scratch $$corpus \
			>tests/fuzz/$$t.log 2>&1 || { failed="$$failed $$t"; tail -n 60 tests/fuzz/$$t.log; \
			echo "fuzz: $$t: the finding's first lines:"; \
			grep -E -m 8 '^(==[0-9]+== ?ERROR|SUMMARY|fuzz_[a-z_]+: |.*runtime error)' tests/fuzz/$$t.log; }; \
		grep -h '^stat::number_of_executed_units\|^Done' tests/fuzz/$$t.log | tr '\n' ' '; echo; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed (inputs kept in tests/data/*-corpus)"; exit 1; fi
.PHONY: fuzz
export FUZZ_OPTS_http
CLEANFILES += tests/fuzz/libfuzzcore.a $(FUZZ_TARGETS:%=tests/fuzz/fuzz_%_libfuzzer) $(FUZZ_TARGETS:%=tests/fuzz/%.log)
clean-local: clean-fuzz clean-test-models
clean-fuzz:
	-rm -rf tests/fuzz/core $(FUZZ_TARGETS:%=tests/fuzz/%-scratch)
# Models and references the ONNX tests generate in the build directory.
clean-test-models:
	-rm -rf tests/onnx_models tests/onnx_node_cases tests/onnx_import_cases tests/onnx-cases tests/conv_odd tests/conv_odd.log
.PHONY: clean-fuzz clean-test-models
EXTRA_DIST += tests/fuzz/fuzz_safetensors.c tests/fuzz/fuzz_model_json.c tests/fuzz/fuzz_ipc_ring.c tests/fuzz/fuzz_ipc_control.c \
	tests/fuzz/fuzz_http.c

# --- ONNX import (graph-import) ---
# Shape inference on hand-built graphs; whole exported models imported, folded, specialized and run
# on the CPU kernels against onnxruntime (the generator's models stay in the build directory).
check_PROGRAMS += tests/unit/test_graph_shape tests/unit/test_onnx_import
TESTS += tests/unit/test_graph_shape tests/unit/test_onnx_import.sh tests/unit/test_onnx_node.sh \
	tests/unit/test_onnx_ops_ort.sh tests/unit/test_export_suite.sh
tests_unit_test_graph_shape_SOURCES = tests/unit/test_graph_shape.c $(TEST_COMMON)
tests_unit_test_graph_shape_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_graph_shape_LDADD = $(TEST_LDADD)
# The symbolic dim expressions behind the output-shape functions, against a direct evaluation.
check_PROGRAMS += tests/unit/test_graph_sym
TESTS += tests/unit/test_graph_sym
# No call loops between source files (the objects' symbols; needs the whole build).
TESTS += tests/unit/test_layering.sh
dist_check_SCRIPTS += tests/unit/test_layering.sh
# docs/ARCHITECTURE.md names every source file.
TESTS += tests/unit/test_docs_files.sh
dist_check_SCRIPTS += tests/unit/test_docs_files.sh
EXTRA_DIST += tests/helpers/source_map.py
EXTRA_DIST += tests/helpers/check_layering.py
tests_unit_test_graph_sym_SOURCES = tests/unit/test_graph_sym.c $(TEST_COMMON)
tests_unit_test_graph_sym_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_graph_sym_LDADD = $(TEST_LDADD)
tests_unit_test_onnx_import_SOURCES = tests/unit/test_onnx_import.c $(TEST_COMMON)
tests_unit_test_onnx_import_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_onnx_import_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_onnx_import_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += tests/unit/test_onnx_import.sh tests/unit/test_onnx_node.sh tests/unit/test_onnx_ops_ort.sh \
	tests/unit/test_export_suite.sh
EXTRA_DIST += tests/helpers/make_onnx_import_cases.py tests/helpers/make_onnx_node_cases.py \
	tests/helpers/make_onnx_ops_cases.py tests/helpers/export_suite.py

# --- CPU kernels (cpu-kernels) ---
# Every kernel against naive double-precision references; then random one-node models against onnxruntime.
CPU_KERNEL_TESTS = tests/unit/test_cpu_kernels tests/unit/test_cpu_kernels_ort
check_PROGRAMS += $(CPU_KERNEL_TESTS)
TESTS += tests/unit/test_cpu_kernels tests/unit/test_cpu_kernels_ort.sh
CPU_NODE_FIXTURE = tests/helpers/cpu_node_fixture.c tests/helpers/cpu_node_fixture.h
tests_unit_test_cpu_kernels_SOURCES = tests/unit/test_cpu_kernels.c $(CPU_NODE_FIXTURE) $(TEST_COMMON)
tests_unit_test_cpu_kernels_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_cpu_kernels_LDADD = $(TEST_LDADD)
# The vectorised exp/tanh/erf/erfc against libm's double-precision functions (1e-6 relative).
check_PROGRAMS += tests/unit/test_cpu_vmath
TESTS += tests/unit/test_cpu_vmath
tests_unit_test_cpu_vmath_SOURCES = tests/unit/test_cpu_vmath.c $(TEST_COMMON)
tests_unit_test_cpu_vmath_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_cpu_vmath_LDADD = $(TEST_LDADD)
tests_unit_test_cpu_kernels_ort_SOURCES = tests/unit/test_cpu_kernels_ort.c $(CPU_NODE_FIXTURE) $(TEST_COMMON)
tests_unit_test_cpu_kernels_ort_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_cpu_kernels_ort_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_cpu_kernels_ort_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += tests/unit/test_cpu_kernels_ort.sh
EXTRA_DIST += tests/helpers/cpu_kernels_ref.py

# --- ONNX model references (onnx-refs) ---
# tests/helpers/onnx_reference.py exports models with random weights and writes onnxruntime/PyTorch references.
EXTRA_DIST += tests/helpers/onnx_reference.py

# --- ONNX models through the engine (engine) ---
# Exported models served by model_load + model_exec_run on the CPU backend, against onnxruntime.
check_PROGRAMS += tests/helpers/onnx_engine_run
tests_helpers_onnx_engine_run_SOURCES = tests/helpers/onnx_engine_run.c $(TEST_COMMON)
tests_helpers_onnx_engine_run_CPPFLAGS = $(TEST_CPPFLAGS)
tests_helpers_onnx_engine_run_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_helpers_onnx_engine_run_LDADD = $(TEST_LDADD)
TESTS += tests/integration/test_onnx_models.sh
# A model served at fp16 measured against FP32 at load (its stats and log).
TESTS += tests/integration/test_precision_check.sh
dist_check_SCRIPTS += tests/integration/test_precision_check.sh
dist_check_SCRIPTS += tests/integration/test_onnx_models.sh
# The models people serve, exported and served by a real daemon, against onnxruntime and PyTorch (export_suite.py).
TESTS += tests/integration/test_served_models.sh
dist_check_SCRIPTS += tests/integration/test_served_models.sh
EXTRA_DIST += tests/helpers/export_suite_zoo.py tests/helpers/export_suite_run.py tests/helpers/export_suite_serve.py \
	tests/helpers/export_suite_report.py tests/helpers/export_suite_driver.py
# The convolution family at odd geometries through the CPU backend's plan, against onnxruntime.
TESTS += tests/integration/test_cpu_conv_odd.sh
dist_check_SCRIPTS += tests/integration/test_cpu_conv_odd.sh
EXTRA_DIST += tests/helpers/make_conv_odd_onnx.py
# The ONNX package's node tests, each loaded and run by the engine (test_onnx_node.sh).
check_PROGRAMS += tests/helpers/onnx_node_engine
tests_helpers_onnx_node_engine_SOURCES = tests/helpers/onnx_node_engine.c $(TEST_COMMON)
tests_helpers_onnx_node_engine_CPPFLAGS = $(TEST_CPPFLAGS)
tests_helpers_onnx_node_engine_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_helpers_onnx_node_engine_LDADD = $(TEST_LDADD)
# The fashion-cnn demo (ONNX) through the engine: logits against PyTorch's, and the test-set accuracy (>= 0.91).
FASHION_CNN_CPPFLAGS = $(TEST_CPPFLAGS) -DFASHION_MODEL='"fashion-cnn"' -DFASHION_REF='"tests/data/fashion-cnn-ref.json"' \
	-DFASHION_MIN_ACCURACY=0.91
check_PROGRAMS += tests/unit/test_fashion_cnn tests/unit/test_fashion_cnn_accuracy
TESTS += tests/unit/test_fashion_cnn tests/unit/test_fashion_cnn_accuracy
tests_unit_test_fashion_cnn_SOURCES = $(TEST_FASHION)
tests_unit_test_fashion_cnn_CPPFLAGS = $(FASHION_CNN_CPPFLAGS)
tests_unit_test_fashion_cnn_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_fashion_cnn_LDADD = $(TEST_LDADD)
tests_unit_test_fashion_cnn_accuracy_SOURCES = $(TEST_FASHION)
tests_unit_test_fashion_cnn_accuracy_CPPFLAGS = $(FASHION_CNN_CPPFLAGS) -DFASHION_ACCURACY
tests_unit_test_fashion_cnn_accuracy_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_unit_test_fashion_cnn_accuracy_LDADD = $(TEST_LDADD)

# --- CUDA backend vs CPU backend, every op (skips without a GPU) ---
check_PROGRAMS += tests/unit/test_backend_ops
TESTS += tests/unit/test_backend_ops
tests_unit_test_backend_ops_SOURCES = tests/unit/test_backend_ops.c $(TEST_COMMON)
tests_unit_test_backend_ops_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_backend_ops_LDADD = $(TEST_LDADD)

# --- per-step plan profiles (profile) ---
# device_plan_profile on a MatMul-heavy graph (entries, the MatMul's share, the output against the
# reference evaluator); model_exec_profile on fashion-mlp.  The _cuda build runs it on cuda:0 (skips without a GPU).
check_PROGRAMS += tests/unit/test_plan_profile tests/unit/test_plan_profile_cuda
TESTS += tests/unit/test_plan_profile tests/unit/test_plan_profile_cuda
tests_unit_test_plan_profile_SOURCES = tests/unit/test_plan_profile.c $(GRAPH_TEST_COMMON)
tests_unit_test_plan_profile_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_plan_profile_LDADD = $(TEST_LDADD)
tests_unit_test_plan_profile_cuda_SOURCES = $(tests_unit_test_plan_profile_SOURCES)
tests_unit_test_plan_profile_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_plan_profile_cuda_LDADD = $(TEST_LDADD)

# --- install and first use (usability) ---
# configure --prefix + make install, the example built with pkg-config against the installed files.
# Triton's /config and /stats, and unimplemented request parameters refused by name.
# libinferd's wait/last-error/message promises (client_usability.c) against a daemon.
TESTS += tests/integration/test_install_prefix.sh tests/integration/test_http_triton.sh \
	tests/integration/test_client_usability.sh tests/integration/test_inferctl.sh
dist_check_SCRIPTS += tests/integration/test_install_prefix.sh tests/integration/test_http_triton.sh \
	tests/integration/test_client_usability.sh tests/integration/test_inferctl.sh
check_PROGRAMS += tests/helpers/client_usability
tests_helpers_client_usability_SOURCES = tests/helpers/client_usability.c
tests_helpers_client_usability_LDADD = client/lib/libinferd.la
EXTRA_DIST += tests/helpers/http_triton.py

# --- Python client (python-client) ---
# client/python installed with pip and its pytest suite run against a private daemon; the ABI probe
# prints libinferd's struct layout for the suite to compare with its ctypes mirror.
check_PROGRAMS += tests/helpers/inferd_abi
tests_helpers_inferd_abi_SOURCES = tests/helpers/inferd_abi.c
TESTS += tests/integration/test_python_client.sh
dist_check_SCRIPTS += tests/integration/test_python_client.sh
EXTRA_DIST += client/python/pyproject.toml client/python/README.md client/python/inferd/__init__.py \
	client/python/inferd/_lib.py client/python/inferd/_inputs.py client/python/inferd/errors.py \
	client/python/inferd/http.py client/python/inferd/metadata.py client/python/inferd/shm.py \
	client/python/inferd/py.typed client/python/tests/conftest.py client/python/tests/test_abi.py \
	client/python/tests/test_fashion.py client/python/tests/test_http.py client/python/tests/test_multi.py \
	client/python/tests/test_shm.py client/python/tests/test_repository.py \
	client/bench/python_client_bench.py

# --- model files read into private memory (file_copy.c, safetensors.c); rescans wait for files to settle ---
check_PROGRAMS += tests/unit/test_file_copy
TESTS += tests/unit/test_file_copy tests/integration/test_file_change.sh
dist_check_SCRIPTS += tests/integration/test_file_change.sh
EXTRA_DIST += tests/helpers/make_file_change_models.py tests/helpers/file_change_clients.py
tests_unit_test_file_copy_SOURCES = tests/unit/test_file_copy.c $(TEST_COMMON)
tests_unit_test_file_copy_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_file_copy_LDADD = $(TEST_LDADD)

# --- model lifecycle on disk: repository layout and versions, model_load_version ---
LIFECYCLE_DISK_TESTS = tests/unit/test_repository_scan tests/unit/test_model_version tests/unit/test_model_version_cuda \
	tests/unit/test_model_warmup tests/unit/test_model_warmup_cuda tests/unit/test_model_instances
check_PROGRAMS += $(LIFECYCLE_DISK_TESTS)
TESTS += $(LIFECYCLE_DISK_TESTS)
tests_unit_test_repository_scan_SOURCES = tests/unit/test_repository_scan.c $(TEST_COMMON)
tests_unit_test_repository_scan_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_repository_scan_LDADD = $(TEST_LDADD)
tests_unit_test_model_version_SOURCES = tests/unit/test_model_version.c tests/helpers/onnx_build.c \
	tests/helpers/onnx_build.h $(TEST_COMMON)
tests_unit_test_model_version_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_model_version_LDADD = $(TEST_LDADD)
tests_unit_test_model_version_cuda_SOURCES = $(tests_unit_test_model_version_SOURCES)
tests_unit_test_model_version_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_model_version_cuda_LDADD = $(TEST_LDADD)
tests_unit_test_model_warmup_SOURCES = tests/unit/test_model_warmup.c tests/helpers/onnx_build.c \
	tests/helpers/onnx_build.h $(TEST_COMMON)
tests_unit_test_model_warmup_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_model_warmup_LDADD = $(TEST_LDADD)
tests_unit_test_model_warmup_cuda_SOURCES = $(tests_unit_test_model_warmup_SOURCES)
tests_unit_test_model_warmup_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_unit_test_model_warmup_cuda_LDADD = $(TEST_LDADD)
tests_unit_test_model_instances_SOURCES = tests/unit/test_model_instances.c $(TEST_COMMON)
tests_unit_test_model_instances_CPPFLAGS = $(TEST_CPPFLAGS)
tests_unit_test_model_instances_LDADD = $(TEST_LDADD)
# inferctl load/reload/unload/index against a stand-in server: the requests, the output, the errors.
TESTS += tests/integration/test_inferctl_repository.sh
dist_check_SCRIPTS += tests/integration/test_inferctl_repository.sh
EXTRA_DIST += tests/helpers/fake_repository_server.py
