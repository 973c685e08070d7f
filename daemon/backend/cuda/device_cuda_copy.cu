/* device_cuda_copy.cu: the batched-copy kernels: one launch moves every entry of a table (small tensors through mapped host memory). */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>

#include "device.h"
#include "device_cuda_impl.h"

/* Bytes one block moves per pass at the widest access (16 B a thread). */
#define COPY_BLOCK_BYTES ((size_t)CUDA_THREADS * 16)
/* At most this many blocks per entry: a mapped tensor is small, a DMA copy moves the large ones. */
#define COPY_MAX_BLOCKS_X 256
/* The grid's second dimension is bounded by CUDA; more entries are strided over. */
#define COPY_MAX_BLOCKS_Y 65535

/* Copy bytes from s to d with this block's share of the grid, in units of T (the caller checked alignment). */
template <typename T>
static __device__ __forceinline__ void
copy_units(char *d, const char *s, size_t bytes)
{
	size_t n = bytes / sizeof(T), i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n; i += stride)
		((T *)d)[i] = ((const T *)s)[i];
}

/* Copy one entry with this block's share of the grid along x, at the widest access its alignment allows. */
static __device__ __forceinline__ void
copy_entry(const struct device_copy_entry &e)
{
	uintptr_t align = (uintptr_t)e.dst | (uintptr_t)e.src | (uintptr_t)e.bytes;

	if (align % 16 == 0)
		copy_units<uint4>((char *)e.dst, (const char *)e.src, e.bytes);
	else if (align % 4 == 0)
		copy_units<uint32_t>((char *)e.dst, (const char *)e.src, e.bytes);
	else
		copy_units<unsigned char>((char *)e.dst, (const char *)e.src, e.bytes);
}

/*
 * Entry blockIdx.y (strided by gridDim.y) is copied by the blocks along x.
 * The entry is read once per block into shared memory: the table lies in
 * host memory, and each read of it crosses the bus.
 */
static __global__ void
copy_batch_kernel(const struct device_copy_entry *entries, size_t n)
{
	__shared__ struct device_copy_entry e;

	for (size_t k = blockIdx.y; k < n; k += gridDim.y) {
		if (threadIdx.x == 0)
			e = entries[k];
		__syncthreads();
		copy_entry(e);
		/* Nobody may overwrite e for the next entry while a thread still reads it. */
		__syncthreads();
	}
}

/*
 * A small table passed by value: the kernel reads it from its parameters, not
 * across the bus.  Two sizes, so a lone request's launch does not carry
 * 3 KiB of parameters (the classic 4 KiB limit bounds the larger one).
 */
#define COPY_INLINE_SMALL 8
#define COPY_INLINE_LARGE 128
template <int N>
struct copy_inline {
	struct device_copy_entry e[N];
};

/* The same over a table of at most N entries held in the launch's parameters. */
template <int N>
static __global__ void
copy_batch_inline_kernel(const struct copy_inline<N> t, unsigned int n)
{
	for (unsigned int k = blockIdx.y; k < n; k += gridDim.y)
		copy_entry(t.e[k]);
}

/* Launch the inline kernel of N entries over host_entries[0, n). */
template <int N>
static void
copy_launch_inline(cudaStream_t stream, dim3 grid, const struct device_copy_entry *host_entries, size_t n)
{
	struct copy_inline<N> t;

	memcpy(t.e, host_entries, n * sizeof t.e[0]);
	copy_batch_inline_kernel<N><<<grid, CUDA_THREADS, 0, stream>>>(t, (unsigned int)n);
}

/*
 * Queue the kernel: enough blocks along x for the longest entry, one row of
 * blocks per entry; up to COPY_INLINE_LARGE entries travel in the launch
 * itself (host_entries), more are read from entries (device-readable).
 */
cudaError_t
cuda_launch_copy_batch(cudaStream_t stream, const struct device_copy_entry *host_entries,
    const struct device_copy_entry *entries, size_t n, size_t max_bytes)
{
	size_t bx = (max_bytes + COPY_BLOCK_BYTES - 1) / COPY_BLOCK_BYTES;
	dim3 grid((unsigned int)(bx < 1 ? 1 : bx > COPY_MAX_BLOCKS_X ? COPY_MAX_BLOCKS_X : bx),
	    (unsigned int)(n > COPY_MAX_BLOCKS_Y ? COPY_MAX_BLOCKS_Y : n));

	if (n == 0)
		return cudaSuccess;
	if (n <= COPY_INLINE_SMALL)
		copy_launch_inline<COPY_INLINE_SMALL>(stream, grid, host_entries, n);
	else if (n <= COPY_INLINE_LARGE)
		copy_launch_inline<COPY_INLINE_LARGE>(stream, grid, host_entries, n);
	else
		copy_batch_kernel<<<grid, CUDA_THREADS, 0, stream>>>(entries, n);
	return cudaGetLastError();
}
