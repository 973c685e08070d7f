/* alloc.c: jansson's allocations through alloc.h's checked malloc in the fault-injection build (see alloc.h). */
#include "config.h"

#include <jansson.h>

#include "alloc.h"

#ifdef INFERD_FAULT_INJECTION
/* jansson's allocator: xmalloc, so INFERD_FAULT=malloc:N reaches JSON parsing and encoding. */
static void *
alloc_json_malloc(size_t n)
{
	return xmalloc(n);
}
#endif

/* Install the allocator above; nothing without fault injection. */
void
alloc_install_json(void)
{
#ifdef INFERD_FAULT_INJECTION
	json_set_alloc_funcs(alloc_json_malloc, free);
#endif
}
