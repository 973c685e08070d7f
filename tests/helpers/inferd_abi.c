/*
 * inferd_abi.c: libinferd's public layout as the C compiler sees it, for the
 * Python client's ABI test (client/python/tests/test_abi.py).
 *
 * Prints one line per fact: "size STRUCT BYTES", "offset STRUCT FIELD BYTES",
 * "const NAME VALUE".  The test compares every line with the ctypes mirror in
 * client/python/inferd/_lib.py, so a changed header fails a test instead of
 * corrupting memory.  When a struct gains a field, add its line here.
 */
#include <stddef.h>
#include <stdio.h>

#include "inferd.h"

#define SIZE(s) printf("size %s %zu\n", #s, sizeof(struct s))
#define OFF(s, f) printf("offset %s %s %zu\n", #s, #f, offsetof(struct s, f))
#define CONST_LOCAL(name, value, text) printf("const INFERD_%s %d\n", #name, INFERD_##name);
#define CONST_OUTCOME(name, code, err, http, label, text, ctext) \
	printf("const INFERD_%s %d\n", #err, INFERD_##err);

/* The structs the Python client mirrors, field by field. */
static void
print_structs(void)
{
	SIZE(inferd_options);
	OFF(inferd_options, size); OFF(inferd_options, region_bytes); OFF(inferd_options, sq_entries);
	OFF(inferd_options, cq_entries); OFF(inferd_options, timeout_ms);
	OFF(inferd_options, reconnect); OFF(inferd_options, reconnect_max_ms); OFF(inferd_options, spin_us);
	SIZE(inferd_tensor_info);
	OFF(inferd_tensor_info, name); OFF(inferd_tensor_info, datatype); OFF(inferd_tensor_info, elem_bytes);
	OFF(inferd_tensor_info, ndims); OFF(inferd_tensor_info, dims); OFF(inferd_tensor_info, max_dims);
	OFF(inferd_tensor_info, follows_input); OFF(inferd_tensor_info, follows_dim);
	SIZE(inferd_model);
	OFF(inferd_model, id); OFF(inferd_model, name); OFF(inferd_model, max_batch_size);
	OFF(inferd_model, input_name); OFF(inferd_model, output_name); OFF(inferd_model, datatype);
	OFF(inferd_model, input_ndims); OFF(inferd_model, output_ndims); OFF(inferd_model, input_dims);
	OFF(inferd_model, output_dims); OFF(inferd_model, input_row_bytes);
	OFF(inferd_model, output_row_bytes); OFF(inferd_model, nlabels); OFF(inferd_model, labels);
	OFF(inferd_model, ninputs); OFF(inferd_model, noutputs); OFF(inferd_model, inputs);
	OFF(inferd_model, outputs); OFF(inferd_model, version);
	SIZE(inferd_tensor);
	OFF(inferd_tensor, data); OFF(inferd_tensor, offset); OFF(inferd_tensor, bytes);
	OFF(inferd_tensor, reserved);
	SIZE(inferd_io);
	OFF(inferd_io, name); OFF(inferd_io, tensor); OFF(inferd_io, ndims); OFF(inferd_io, dims);
	OFF(inferd_io, reserved);
	SIZE(inferd_request);
	OFF(inferd_request, size); OFF(inferd_request, model); OFF(inferd_request, rows);
	OFF(inferd_request, input); OFF(inferd_request, output); OFF(inferd_request, timeout_us);
	OFF(inferd_request, user_data);
	OFF(inferd_request, ninputs); OFF(inferd_request, noutputs); OFF(inferd_request, inputs);
	OFF(inferd_request, outputs); OFF(inferd_request, id);
	SIZE(inferd_completion);
	OFF(inferd_completion, user_data); OFF(inferd_completion, status);
	OFF(inferd_completion, reserved0); OFF(inferd_completion, id);
}

int
main(void)
{
	print_structs();
	INFERD_LOCAL_ERROR_MAP(CONST_LOCAL)
	INFERD_OUTCOME_MAP(CONST_OUTCOME)
	printf("const INFERD_VERSION_MAJOR %d\n", INFERD_VERSION_MAJOR);
	printf("const INFERD_VERSION_MINOR %d\n", INFERD_VERSION_MINOR);
	return 0;
}
