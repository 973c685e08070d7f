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
