# tests/local.mk: unit, integration and fault tests, all behind make check.

TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	ASAN_OPTIONS="$${ASAN_OPTIONS:-protect_shadow_gap=0:detect_leaks=1}"; export ASAN_OPTIONS; \
	UBSAN_OPTIONS="$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"; export UBSAN_OPTIONS;

TEST_COMMON = tests/test_util.c tests/test_util.h
TEST_LDADD = $(INFERD_CORE_LIBS)
TEST_FASHION = tests/test_fashion.c tests/fashion_data.c tests/fashion_data.h $(TEST_COMMON)
# The engine tests are built twice: on the CPU backend, and on CUDA (they skip without a GPU).
TEST_CUDA_CPPFLAGS = $(AM_CPPFLAGS) -DTEST_DEVICE='"cuda:0"'

# --- engine tests (lead) ---
ENGINE_TESTS = tests/test_ops tests/test_ops_cuda tests/test_model_load tests/test_model_load_cuda \
	tests/test_fashion tests/test_fashion_cuda tests/test_fashion_accuracy tests/test_fashion_accuracy_cuda \
	tests/test_batcher tests/test_batcher_cuda
check_PROGRAMS += $(ENGINE_TESTS)
TESTS += $(ENGINE_TESTS)
tests_test_ops_SOURCES = tests/test_ops.c $(TEST_COMMON)
tests_test_ops_LDADD = $(TEST_LDADD)
tests_test_ops_cuda_SOURCES = $(tests_test_ops_SOURCES)
tests_test_ops_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_test_ops_cuda_LDADD = $(TEST_LDADD)
tests_test_model_load_SOURCES = tests/test_model_load.c $(TEST_COMMON)
tests_test_model_load_LDADD = $(TEST_LDADD)
tests_test_model_load_cuda_SOURCES = $(tests_test_model_load_SOURCES)
tests_test_model_load_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_test_model_load_cuda_LDADD = $(TEST_LDADD)
tests_test_fashion_SOURCES = $(TEST_FASHION)
tests_test_fashion_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_fashion_LDADD = $(TEST_LDADD)
tests_test_fashion_cuda_SOURCES = $(TEST_FASHION)
tests_test_fashion_cuda_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_fashion_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_test_fashion_cuda_LDADD = $(TEST_LDADD)
tests_test_fashion_accuracy_SOURCES = $(TEST_FASHION)
tests_test_fashion_accuracy_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_fashion_accuracy_CPPFLAGS = $(AM_CPPFLAGS) -DFASHION_ACCURACY
tests_test_fashion_accuracy_LDADD = $(TEST_LDADD)
tests_test_fashion_accuracy_cuda_SOURCES = $(TEST_FASHION)
tests_test_fashion_accuracy_cuda_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_fashion_accuracy_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS) -DFASHION_ACCURACY
tests_test_fashion_accuracy_cuda_LDADD = $(TEST_LDADD)
tests_test_batcher_SOURCES = tests/test_batcher.c $(TEST_COMMON)
tests_test_batcher_LDADD = $(TEST_LDADD)
tests_test_batcher_cuda_SOURCES = $(tests_test_batcher_SOURCES)
tests_test_batcher_cuda_CPPFLAGS = $(TEST_CUDA_CPPFLAGS)
tests_test_batcher_cuda_LDADD = $(TEST_LDADD)
EXTRA_DIST += tests/data

# --- daemon lifecycle tests (main) ---
dist_check_SCRIPTS += tests/test_config.sh tests/config_service.sh tests/test_lifecycle.sh
TESTS += tests/test_config.sh tests/config_service.sh tests/test_lifecycle.sh
EXTRA_DIST += tests/lifecycle_driver.py

# --- HTTP tests (http) ---
# The KServe codec and the staging pool as units; the codec's fuzz target run over its corpus
# (every file, every truncation, fixed mutations); a real daemon driven over HTTP.
HTTP_C_TESTS = tests/test_kserve tests/test_pinned_pool tests/fuzz_kserve
check_PROGRAMS += $(HTTP_C_TESTS)
TESTS += $(HTTP_C_TESTS) tests/test_http.sh
tests_test_kserve_SOURCES = tests/test_kserve.c tests/kserve_fixture.h $(TEST_COMMON)
tests_test_kserve_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_kserve_LDADD = $(TEST_LDADD)
tests_test_pinned_pool_SOURCES = tests/test_pinned_pool.c $(TEST_COMMON)
tests_test_pinned_pool_LDADD = $(TEST_LDADD)
tests_fuzz_kserve_SOURCES = tests/fuzz_kserve.c tests/kserve_fixture.h
tests_fuzz_kserve_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_fuzz_kserve_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += tests/test_http.sh
EXTRA_DIST += tests/http_client.py

# libFuzzer build of the same target, only on request (needs clang with libFuzzer):
#   make fuzz-kserve && tests/fuzz_kserve_libfuzzer -max_total_time=60 $(srcdir)/tests/data/kserve-corpus
# It compiles the codec from source, so it links without the rest of the daemon.
FUZZ_CC = clang
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined
KSERVE_FUZZ_SRC = $(srcdir)/tests/fuzz_kserve.c $(srcdir)/daemon/kserve.c $(srcdir)/daemon/error.c
fuzz-kserve: tests/fuzz_kserve_libfuzzer
tests/fuzz_kserve_libfuzzer: $(KSERVE_FUZZ_SRC) $(srcdir)/daemon/kserve.h $(srcdir)/tests/kserve_fixture.h config.h
	@$(MKDIR_P) tests
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -DFUZZ_LIBFUZZER $(AM_CPPFLAGS) $(JANSSON_CFLAGS) \
		-o $@ $(KSERVE_FUZZ_SRC) $(JANSSON_LIBS) -lm
CLEANFILES += tests/fuzz_kserve_libfuzzer
.PHONY: fuzz-kserve

# --- shared-memory IPC tests (ipc) ---
check_PROGRAMS += tests/ipc_client tests/ipc_hostile
tests_ipc_client_SOURCES = tests/ipc_client.c
tests_ipc_client_LDADD = client/libinferd.la -lm
tests_ipc_hostile_SOURCES = tests/ipc_hostile.c include/inferd_wire.h
tests_ipc_hostile_LDADD = -lpthread
IPC_TESTS = tests/test_ipc_compare.sh tests/test_ipc_load.sh tests/test_ipc_kill.sh \
	tests/test_ipc_hostile.sh
TESTS += $(IPC_TESTS)
dist_check_SCRIPTS += $(IPC_TESTS)
EXTRA_DIST += tests/test_ipc_lib.sh

# --- bench smoke test (bench) ---
# inferd-bench and bench-http-baseline against a private CPU daemon, both protocols.
TESTS += tests/test_bench.sh
dist_check_SCRIPTS += tests/test_bench.sh

# --- ONNX decoder (onnx-decode) ---
# Models from tests/make_onnx_cases.py checked against the onnx package's reading of them, every truncation,
# peak RSS of a ~200 MB model; the decoder's fuzz target run over its seed corpus.
check_PROGRAMS += tests/test_onnx_decode tests/fuzz_onnx
TESTS += tests/test_onnx_decode.sh tests/fuzz_onnx
dist_check_SCRIPTS += tests/test_onnx_decode.sh
EXTRA_DIST += tests/make_onnx_cases.py
tests_test_onnx_decode_SOURCES = tests/test_onnx_decode.c $(TEST_COMMON)
tests_test_onnx_decode_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_onnx_decode_LDADD = $(TEST_LDADD)
tests_fuzz_onnx_SOURCES = tests/fuzz_onnx.c
tests_fuzz_onnx_LDADD = $(TEST_LDADD)

# libFuzzer build (needs clang with libFuzzer):
#   make fuzz-onnx && tests/fuzz_onnx_libfuzzer -max_total_time=60 $(srcdir)/tests/data/onnx-corpus
ONNX_FUZZ_SRC = $(srcdir)/tests/fuzz_onnx.c $(srcdir)/daemon/onnx_decode.c $(srcdir)/daemon/onnx_decode_tensor.c \
	$(srcdir)/daemon/protobuf_wire.c $(srcdir)/daemon/error.c
fuzz-onnx: tests/fuzz_onnx_libfuzzer
tests/fuzz_onnx_libfuzzer: $(ONNX_FUZZ_SRC) $(srcdir)/daemon/onnx_decode.h $(srcdir)/daemon/onnx_decode_impl.h \
		$(srcdir)/daemon/protobuf_wire.h config.h
	@$(MKDIR_P) tests
	$(AM_V_CCLD)$(FUZZ_CC) $(FUZZ_CFLAGS) -DFUZZ_LIBFUZZER $(AM_CPPFLAGS) -o $@ $(ONNX_FUZZ_SRC)
CLEANFILES += tests/fuzz_onnx_libfuzzer
.PHONY: fuzz-onnx

# --- ONNX import (graph-import) ---
# Shape inference on hand-built graphs; whole exported models imported, folded, specialized and run
# on the CPU kernels against onnxruntime (the generator's models stay in the build directory).
check_PROGRAMS += tests/test_graph_shape tests/test_onnx_import
TESTS += tests/test_graph_shape tests/test_onnx_import.sh
tests_test_graph_shape_SOURCES = tests/test_graph_shape.c $(TEST_COMMON)
tests_test_graph_shape_LDADD = $(TEST_LDADD)
tests_test_onnx_import_SOURCES = tests/test_onnx_import.c $(TEST_COMMON)
tests_test_onnx_import_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_onnx_import_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += tests/test_onnx_import.sh
EXTRA_DIST += tests/make_onnx_import_cases.py

# --- CPU kernels (cpu-kernels) ---
# Every kernel against naive double-precision references; then random one-node models against onnxruntime.
CPU_KERNEL_TESTS = tests/test_cpu_kernels tests/test_cpu_kernels_ort
check_PROGRAMS += $(CPU_KERNEL_TESTS)
TESTS += tests/test_cpu_kernels tests/test_cpu_kernels_ort.sh
CPU_NODE_FIXTURE = tests/cpu_node_fixture.c tests/cpu_node_fixture.h
tests_test_cpu_kernels_SOURCES = tests/test_cpu_kernels.c $(CPU_NODE_FIXTURE) $(TEST_COMMON)
tests_test_cpu_kernels_LDADD = $(TEST_LDADD)
tests_test_cpu_kernels_ort_SOURCES = tests/test_cpu_kernels_ort.c $(CPU_NODE_FIXTURE) $(TEST_COMMON)
tests_test_cpu_kernels_ort_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
tests_test_cpu_kernels_ort_LDADD = $(TEST_LDADD)
dist_check_SCRIPTS += tests/test_cpu_kernels_ort.sh
EXTRA_DIST += tests/cpu_kernels_ref.py

# --- CUDA backend vs CPU backend, every op (skips without a GPU) ---
check_PROGRAMS += tests/test_backend_ops
TESTS += tests/test_backend_ops
tests_test_backend_ops_SOURCES = tests/test_backend_ops.c $(TEST_COMMON)
tests_test_backend_ops_LDADD = $(TEST_LDADD)
