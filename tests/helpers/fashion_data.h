/* Fashion-MNIST IDX loader for tests (reads gzipped files through gzip -dc). */
#ifndef INFERD_TESTS_FASHION_DATA_H
#define INFERD_TESTS_FASHION_DATA_H

#include <stddef.h>

#define FASHION_IDX_MAGIC_IMAGES 0x00000803u
#define FASHION_IDX_MAGIC_LABELS 0x00000801u

/* Load a gzipped IDX file (images or labels); *data is malloc'ed, caller frees.
 * On success returns 0 and sets *count (number of items) and *item_size
 * (bytes per item: rows*cols for images, 1 for labels). On failure returns -1
 * and writes a message to err. */
int fashion_load_idx(const char *gz_path, unsigned char **data, size_t *count, size_t *item_size, char *err, size_t errlen);

/* Directory holding the dataset: $INFERD_FASHION_DIR or the Debian default. */
const char *fashion_data_dir(void);

#endif
