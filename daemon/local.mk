# daemon/local.mk: the daemon's core library (shared with the tests) and the inferd program.

# Only the daemon, its tests and the in-process bench tool see daemon/'s headers.
DAEMON_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/daemon

noinst_LIBRARIES += daemon/libinferd_core.a
daemon_libinferd_core_a_SOURCES = \
	daemon/error.c daemon/error.h \
	daemon/clock.c daemon/clock.h \
	daemon/fault.c daemon/fault.h \
	daemon/log.c daemon/log.h \
	daemon/graph.c daemon/graph_shape.c daemon/graph.h \
	daemon/device.c daemon/device.h daemon/device_impl.h daemon/device_unary.h \
	daemon/device_spec.c daemon/device_spec.h \
	daemon/device_cpu.c daemon/device_cpu_kernels.c daemon/device_cpu_kernels.h \
	daemon/safetensors.c daemon/safetensors.h \
	daemon/protobuf_wire.c daemon/protobuf_wire.h \
	daemon/onnx_decode.c daemon/onnx_decode_tensor.c daemon/onnx_decode.h daemon/onnx_decode_impl.h \
	daemon/model.c daemon/model_exec.c daemon/model.h \
	daemon/repository.c daemon/repository.h \
	daemon/metrics.c daemon/metrics.h \
	daemon/batcher.c daemon/batcher.h \
	daemon/daemon_config.c daemon/daemon_config.h \
	daemon/notify.c daemon/notify.h \
	daemon/pinned_pool.c daemon/pinned_pool.h \
	daemon/kserve.c daemon/kserve.h \
	daemon/http.c daemon/http.h daemon/http_guard.c daemon/http_guard.h \
	daemon/ipc.c daemon/ipc.h daemon/ipc_impl.h \
	daemon/ipc_client.c daemon/ipc_conn.c daemon/ipc_ring.c daemon/ipc_auth.c daemon/ipc_access.c \
	daemon/tensor_text.cc daemon/tensor_text.h \
	include/inferd.h include/inferd_wire.h include/inferd_outcome.h
daemon_libinferd_core_a_CPPFLAGS = $(DAEMON_CPPFLAGS)
# Load-time graph rewrites (fusions) and the liveness-based memory plan.
daemon_libinferd_core_a_SOURCES += \
	daemon/graph_fuse.c daemon/graph_fuse.h daemon/graph_fuse_impl.h \
	daemon/graph_fuse_query.c daemon/graph_fuse_pattern.c daemon/graph_fuse_linear.c \
	daemon/graph_plan.c daemon/graph_plan.h
daemon_libinferd_core_a_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS) $(BLAS_CFLAGS) $(SYSTEMD_CFLAGS)
# The tensor data codec is the one C++ unit here: no exceptions or RTTI, so it links with -lstdc++ alone.
TENSOR_TEXT_CXXFLAGS = -std=c++17 -Wall -Wextra -Wshadow -Wno-unused-parameter -fno-exceptions -fno-rtti \
	-pthread $(SANITIZER_FLAGS)
daemon_libinferd_core_a_CXXFLAGS = $(TENSOR_TEXT_CXXFLAGS)

# Everything a program linking the core library needs.
INFERD_CORE_LIBS = daemon/libinferd_core.a $(MHD_LIBS) $(JANSSON_LIBS) $(BLAS_LIBS) \
	$(SYSTEMD_LIBS) $(CUDA_LIBS) $(TENSOR_TEXT_LIBS) -lm

if HAVE_CUDA
# nvcc compiles the CUDA backend; automake has no CUDA language, so the rule is explicit.
daemon_libinferd_core_a_LIBADD = daemon/device_cuda.$(OBJEXT) daemon/device_cuda_kernels.$(OBJEXT)
daemon_libinferd_core_a_DEPENDENCIES = $(daemon_libinferd_core_a_LIBADD)
NVCC_FLAGS = -std=c++17 -O3 $(NVCC_GENCODE) -Xcompiler -fPIC,-Wall \
	-I$(top_builddir) -I$(top_srcdir)/daemon -I$(top_srcdir)/include
daemon/device_cuda.$(OBJEXT): $(srcdir)/daemon/device_cuda.cu $(srcdir)/daemon/device_impl.h \
		$(srcdir)/daemon/device.h $(srcdir)/daemon/graph.h $(srcdir)/daemon/error.h \
		$(srcdir)/daemon/device_cuda_kernels.h config.h
	@$(MKDIR_P) daemon
	$(AM_V_GEN)$(NVCC) $(NVCC_FLAGS) -c -o $@ $(srcdir)/daemon/device_cuda.cu
daemon/device_cuda_kernels.$(OBJEXT): $(srcdir)/daemon/device_cuda_kernels.cu \
		$(srcdir)/daemon/device_cuda_kernels.h $(srcdir)/daemon/device_unary.h \
		$(srcdir)/daemon/graph.h config.h
	@$(MKDIR_P) daemon
	$(AM_V_GEN)$(NVCC) $(NVCC_FLAGS) -c -o $@ $(srcdir)/daemon/device_cuda_kernels.cu
CLEANFILES += daemon/device_cuda.$(OBJEXT) daemon/device_cuda_kernels.$(OBJEXT)
endif
EXTRA_DIST += daemon/device_cuda.cu daemon/device_cuda_kernels.cu daemon/device_cuda_kernels.h

sbin_PROGRAMS += inferd
inferd_SOURCES = daemon/main.c
inferd_CPPFLAGS = $(DAEMON_CPPFLAGS)
inferd_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS) $(SYSTEMD_CFLAGS)
inferd_LDADD = $(INFERD_CORE_LIBS)
