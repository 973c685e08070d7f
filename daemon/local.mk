# daemon/local.mk: the daemon's core library (shared with the tests) and the inferd program.

# Only the daemon, its tests and the in-process bench tool see daemon/'s headers.  The backends live in
# folders of their own (daemon/backend/cpu, daemon/backend/cuda) beside the formula headers both compile
# (daemon/backend/); the rest of the daemon reaches them through device.h.
DAEMON_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/daemon -I$(top_srcdir)/daemon/backend -I$(top_srcdir)/daemon/backend/cpu

noinst_LIBRARIES += daemon/libinferd_core.a
daemon_libinferd_core_a_SOURCES = \
	common/error.c common/error.h \
	daemon/clock.c daemon/clock.h \
	daemon/fault.c daemon/fault.h daemon/alloc.c daemon/alloc.h \
	daemon/log.c daemon/log.h \
	daemon/graph.c daemon/graph_shape.c daemon/graph_shape_util.c daemon/graph_shape_more.c daemon/graph_shape_impl.h \
	daemon/graph_einsum.c daemon/graph_einsum.h daemon/graph.h \
	daemon/device.c daemon/device.h daemon/device_impl.h daemon/backend/device_unary.h daemon/backend/device_resize.h \
	daemon/backend/device_elementwise.h daemon/backend/device_index.h daemon/backend/backend_node.c daemon/backend/backend_node.h \
	daemon/device_spec.c daemon/device_spec.h daemon/device_set.c daemon/device_set.h \
	daemon/backend/cpu/device_cpu.c daemon/backend/cpu/device_cpu_kernels.c daemon/backend/cpu/device_cpu_kernels.h \
	daemon/file_copy.c daemon/file_copy.h daemon/safetensors.c daemon/safetensors.h \
	daemon/protobuf_wire.c daemon/protobuf_wire.h \
	daemon/onnx_decode.c daemon/onnx_decode_reader.c daemon/onnx_decode_tensor.c daemon/onnx_decode.h daemon/onnx_decode_impl.h \
	daemon/model.c daemon/model_bind.c daemon/model_exec.c daemon/model.h daemon/model_impl.h daemon/model_config.c \
	daemon/model_config.h daemon/model_config_json.c daemon/model_layout.c daemon/model_mlp.c \
	daemon/model_onnx.c daemon/model_shape.c daemon/model_memory.c daemon/model_memory.h \
	daemon/model_config_triton.c daemon/model_pbtxt.h \
	daemon/repository.c daemon/repository.h daemon/repository_scan.c daemon/repository_scan.h daemon/model_warmup.c daemon/model_warmup.h daemon/model_padding.c daemon/model_padding.h daemon/model_verdict.c daemon/model_verdict.h \
	daemon/model_config_instances.c \
	daemon/repository_impl.h daemon/repository_load.c daemon/repository_report.c \
	daemon/metrics.c daemon/metrics.h daemon/metrics_gpu.c daemon/metrics_gpu.h daemon/compile_cache.c daemon/compile_cache.h daemon/text_buf.c daemon/text_buf.h daemon/door.h \
	daemon/batcher.c daemon/batcher.h daemon/batcher_impl.h daemon/batcher_queue.c daemon/batcher_clients.c daemon/batcher_launch.c daemon/batcher_contexts.c daemon/batcher_pad.c \
	daemon/daemon_config.c daemon/daemon_config.h daemon/daemon_man.c daemon/daemon_man.h \
	daemon/request_log.c daemon/request_log.h \
	daemon/notify.c daemon/notify.h \
	daemon/pinned_pool.c daemon/pinned_pool.h \
	daemon/kserve.c daemon/kserve.h daemon/kserve_tensor.c daemon/kserve_tensor.h \
	daemon/kserve_params.c daemon/kserve_params.h daemon/kserve_config.c daemon/kserve_config.h \
	daemon/kserve_bytes.c daemon/kserve_bytes.h \
	daemon/kserve_regions.c daemon/kserve_regions.h \
	daemon/kserve_classify.c daemon/kserve_classify.h \
	daemon/http.h daemon/http_internal.h daemon/http_server.c daemon/http_route.c \
	daemon/http_body.c daemon/http_reply.c daemon/http_infer.c daemon/http_guard.c daemon/http_guard.h \
	daemon/http_shm.c daemon/http_shm.h daemon/shm_registry.c daemon/shm_registry.h \
	daemon/http_encoding.c daemon/http_encoding.h \
	daemon/ipc.c daemon/ipc.h daemon/ipc_impl.h \
	daemon/ipc_client.c daemon/ipc_conn.c daemon/ipc_ring.c daemon/peer_auth.c daemon/peer_auth.h daemon/ipc_access.c \
	daemon/tensor_text.cc daemon/tensor_text.h \
	include/inferd.h include/inferd_wire.h include/inferd_outcome.h
daemon_libinferd_core_a_CPPFLAGS = $(DAEMON_CPPFLAGS)
# Load-time graph rewrites (fusions) and the liveness-based memory plan.
daemon_libinferd_core_a_SOURCES += \
	daemon/graph_fuse.c daemon/graph_fuse.h daemon/graph_fuse_impl.h \
	daemon/graph_fuse_query.c daemon/graph_fuse_edit.c daemon/graph_fuse_attention.c daemon/graph_fuse_pattern.c daemon/graph_fuse_linear.c \
	daemon/graph_fuse_noop.c \
	daemon/graph_plan.c daemon/graph_plan.h
# Output shapes as functions of the input shapes: symbolic dims, derived once per model at load.
daemon_libinferd_core_a_SOURCES += \
	daemon/graph_sym.c daemon/graph_sym.h daemon/graph_shapefn.c daemon/graph_shapefn.h daemon/graph_shapefn_impl.h daemon/graph_shapefn_ctx.c \
	daemon/graph_shapefn_ops.c daemon/graph_shapefn_more.c daemon/graph_shapefn_values.c daemon/model_shapefn.c
daemon_libinferd_core_a_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS) $(BLAS_CFLAGS) $(SYSTEMD_CFLAGS) \
	$(ZLIB_CFLAGS) $(XXHASH_CFLAGS)
# The tensor data codec is the one C++ unit here: no exceptions or RTTI, so it links with -lstdc++ alone.
TENSOR_TEXT_CXXFLAGS = -std=c++17 -Wall -Wextra -Wshadow -Wno-unused-parameter -fno-exceptions -fno-rtti \
	-pthread $(SANITIZER_FLAGS)
daemon_libinferd_core_a_CXXFLAGS = $(TENSOR_TEXT_CXXFLAGS)

# The CPU kernel library (one graph node at a time); OpenMP for its own loops.
daemon_libinferd_core_a_SOURCES += \
	daemon/backend/cpu/cpu_kernels.h daemon/backend/cpu/cpu_kernels_impl.h daemon/backend/cpu/cpu_conv_geom.h \
	daemon/backend/cpu/cpu_node.c daemon/backend/cpu/cpu_common.c daemon/backend/cpu/cpu_attention.c daemon/backend/cpu/cpu_threads.c \
	daemon/backend/cpu/cpu_vmath.c daemon/backend/cpu/cpu_broadcast.c \
	daemon/backend/cpu/cpu_gemm.c daemon/backend/cpu/cpu_conv.c daemon/backend/cpu/cpu_conv_transpose.c daemon/backend/cpu/cpu_pool.c \
	daemon/backend/cpu/cpu_elementwise.c daemon/backend/cpu/cpu_cast.c daemon/backend/cpu/cpu_norm.c \
	daemon/backend/cpu/cpu_tensor.c daemon/backend/cpu/cpu_pad.c daemon/backend/cpu/cpu_resize.c \
	daemon/backend/cpu/cpu_predicate.c daemon/backend/cpu/cpu_trilu.c daemon/backend/cpu/cpu_cumsum.c \
	daemon/backend/cpu/cpu_scatter.c daemon/backend/cpu/cpu_rnn.c daemon/backend/cpu/cpu_topk.c \
	daemon/backend/cpu/cpu_scatter_elements.c daemon/backend/cpu/cpu_onehot.c daemon/backend/cpu/cpu_groupnorm.c \
	daemon/backend/cpu/cpu_einsum.c daemon/backend/cpu/cpu_argmax.c daemon/backend/cpu/cpu_tile.c
daemon_libinferd_core_a_CFLAGS += $(OPENMP_CFLAGS)
if HAVE_DNNL
daemon_libinferd_core_a_SOURCES += daemon/backend/cpu/cpu_dnnl.c daemon/backend/cpu/cpu_dnnl.h \
	daemon/backend/cpu/cpu_dnnl_impl.h daemon/backend/cpu/cpu_dnnl_node.c daemon/backend/cpu/cpu_dnnl_norm.c \
	daemon/backend/cpu/cpu_dnnl_binary.c \
	daemon/backend/cpu/cpu_dnnl_weights.c daemon/backend/cpu/cpu_dnnl_weights.h
endif

# ONNX import: op mapping, constant folding and per-shape specialization of the graph.
daemon_libinferd_core_a_SOURCES += \
	daemon/graph_shape.h daemon/graph_fold.c daemon/graph_fold.h \
	daemon/graph_fold_eval.c daemon/graph_fold_eval.h \
	daemon/onnx_import.c daemon/onnx_import_tensors.c daemon/onnx_import_ops.c daemon/onnx_import_rnn.c \
	daemon/onnx_import_attr.c daemon/onnx_import_more.c \
	daemon/onnx_import.h daemon/onnx_import_impl.h

# Everything a program linking the core library needs.
INFERD_CORE_LIBS = daemon/libinferd_core.a daemon/libinferd_pbtxt.a $(PROTOBUF_LIBS) $(MHD_LIBS) $(JANSSON_LIBS) $(BLAS_LIBS) \
	$(SYSTEMD_LIBS) $(DNNL_LIBS) $(MVEC_LIBS) $(CUDNN_LIBS) $(CUDA_LIBS) $(TENSOR_TEXT_LIBS) $(ZLIB_LIBS) $(XXHASH_LIBS) -lm $(OPENMP_CFLAGS)

# The CUDA backend's files (daemon/backend/cuda): device_cuda.cu (streams, plans) and one file per concern
# of the per-op compilers.
CUDA_DIR = daemon/backend/cuda
CUDA_UNITS = device_cuda device_cuda_kernels device_cuda_common device_cuda_support device_cuda_gemm \
	device_cuda_conv device_cuda_dnn device_cuda_dnn_kcache device_cuda_dnn_plan device_cuda_elementwise device_cuda_reduce device_cuda_tensor \
	device_cuda_spatial device_cuda_precision device_cuda_copy device_cuda_index device_cuda_topk \
	device_cuda_rnn device_cuda_attention device_cuda_sdpa device_cuda_argmax
CUDA_HDRS = $(CUDA_DIR)/device_cuda_kernels.h $(CUDA_DIR)/device_cuda_impl.h $(CUDA_DIR)/device_cuda_dnn.h \
	$(CUDA_DIR)/device_cuda_dnn_kcache.h $(CUDA_DIR)/device_cuda_dnn_plan.h $(CUDA_DIR)/device_cuda_sdpa.h $(CUDA_DIR)/device_cuda_store.h
CUDA_DEP_FILES = $(srcdir)/daemon/device_impl.h $(srcdir)/daemon/device.h $(srcdir)/daemon/graph.h \
	$(srcdir)/common/error.h $(srcdir)/daemon/compile_cache.h $(srcdir)/daemon/log.h $(srcdir)/daemon/backend/device_unary.h $(srcdir)/daemon/backend/device_resize.h \
	$(srcdir)/daemon/backend/device_elementwise.h $(srcdir)/daemon/backend/device_index.h $(srcdir)/daemon/backend/backend_node.h \
	$(CUDA_HDRS:%=$(srcdir)/%) $(srcdir)/daemon/backend/cpu/cpu_kernels.h config.h
if HAVE_CUDA
# nvcc compiles the CUDA backend; automake has no CUDA language, so the rule is explicit (a GNU make pattern).
daemon_libinferd_core_a_LIBADD = $(CUDA_UNITS:%=$(CUDA_DIR)/%.$(OBJEXT))
daemon_libinferd_core_a_DEPENDENCIES = $(daemon_libinferd_core_a_LIBADD)
# Deprecated declarations are errors (cuDNN marks them only under CUDNN_WARN_DEPRECATED): cuDNN 9
# deprecates its legacy API piece by piece, and the backend must not depend on any of it.
NVCC_FLAGS = -std=c++17 -O3 $(NVCC_GENCODE) -DCUDNN_WARN_DEPRECATED -Werror=deprecated-declarations \
	-Xcompiler -fPIC,-Wall \
	-I$(top_builddir) -I$(top_srcdir)/daemon -I$(top_srcdir)/daemon/backend -I$(top_srcdir)/$(CUDA_DIR) \
	-I$(top_srcdir)/daemon/backend/cpu -I$(top_srcdir)/include -I$(top_srcdir)/common $(CUDNN_CFLAGS)
$(CUDA_DIR)/%.$(OBJEXT): $(srcdir)/$(CUDA_DIR)/%.cu $(CUDA_DEP_FILES)
	$(AM_V_GEN)$(MKDIR_P) $(CUDA_DIR) && $(NVCC) $(NVCC_FLAGS) -c -o $@ $<
CLEANFILES += $(CUDA_UNITS:%=$(CUDA_DIR)/%.$(OBJEXT))
if HAVE_CUDNN
# The fused-attention probe, a standalone program run by hand on a GPU machine (tests/gpu/sdpa_probe.cu says how);
# nvcc takes the linker flags configure wrote for the C compiler through -Xlinker.
noinst_SCRIPTS = tests/gpu/sdpa_probe
tests/gpu/sdpa_probe: $(srcdir)/tests/gpu/sdpa_probe.cu
	$(AM_V_GEN)$(MKDIR_P) tests/gpu && $(NVCC) -O2 $(NVCC_GENCODE) -Xcompiler -Wall,-Wextra $(CUDNN_CFLAGS) -o $@ $< \
	    $(CUDNN_LIBS:-Wl,%=-Xlinker %)
CLEANFILES += tests/gpu/sdpa_probe
endif
endif
EXTRA_DIST += tests/gpu/sdpa_probe.cu
EXTRA_DIST += $(CUDA_UNITS:%=$(CUDA_DIR)/%.cu) $(CUDA_HDRS)

sbin_PROGRAMS += inferd
inferd_SOURCES = daemon/main.c
inferd_CPPFLAGS = $(DAEMON_CPPFLAGS)
inferd_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JANSSON_CFLAGS) $(SYSTEMD_CFLAGS)
inferd_LDADD = $(INFERD_CORE_LIBS)

# Triton's config.pbtxt: libprotobuf's text-format parser against model_pbtxt.proto (Triton's field names
# and numbers for what inferd honours), in a library of its own since protobuf's code wants C++ exceptions
# and RTTI, which the tensor data codec above is built without.
noinst_LIBRARIES += daemon/libinferd_pbtxt.a
nodist_daemon_libinferd_pbtxt_a_SOURCES = daemon/model_pbtxt.pb.cc daemon/model_pbtxt.pb.h
daemon_libinferd_pbtxt_a_SOURCES = daemon/model_pbtxt.cc daemon/model_pbtxt.h
daemon_libinferd_pbtxt_a_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/daemon $(PROTOBUF_CFLAGS) $(JANSSON_CFLAGS)
daemon_libinferd_pbtxt_a_CXXFLAGS = -std=c++17 -Wall -Wextra -Wno-unused-parameter -pthread $(SANITIZER_FLAGS)
BUILT_SOURCES += daemon/model_pbtxt.pb.cc daemon/model_pbtxt.pb.h
CLEANFILES += daemon/model_pbtxt.pb.cc daemon/model_pbtxt.pb.h
EXTRA_DIST += daemon/model_pbtxt.proto
daemon/model_pbtxt.pb.h: daemon/model_pbtxt.pb.cc
daemon/model_pbtxt.pb.cc: $(srcdir)/daemon/model_pbtxt.proto
	$(AM_V_GEN)$(MKDIR_P) daemon && $(PROTOC) --proto_path=$(srcdir)/daemon --cpp_out=daemon \
		$(srcdir)/daemon/model_pbtxt.proto
