/*
 * cuda_driver.h: the slice of the CUDA driver API that accy's runtime uses.
 *
 * accy's runtime builds without the CUDA toolkit and loads the driver
 * (libcuda.so.1) with dlopen at run time, so it declares the few driver types,
 * constants and entry points it needs here instead of including <cuda.h>.
 * The values below are the driver's ABI (cuda.h, CUDA 12 and 13) and never
 * change between driver versions.
 *
 * ACCY_CUDA_DRIVER_FUNCTIONS lists every entry point by its exported symbol
 * name: where cuda.h #defines a name to a versioned symbol (cuMemAlloc ->
 * cuMemAlloc_v2) the list uses the versioned one, which is what dlsym must ask
 * for. The runtime (mgpu_runtime.c) turns the list into a table of function
 * pointers; the fake driver (fake_cuda_driver.c) turns it into prototypes of
 * the functions it defines, so the compiler checks that both agree.
 */
#ifndef ACCY_RUNTIME_NATIVE_CUDA_DRIVER_H
#define ACCY_RUNTIME_NATIVE_CUDA_DRIVER_H

#include <stddef.h>

typedef int CUresult;                 /* enum cudaError_enum */
typedef int CUdevice;                 /* device ordinal handle */
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 on 64-bit hosts */
typedef int CUjit_option;             /* enum CUjit_option_enum */
typedef int CUdevice_attribute;       /* enum CUdevice_attribute_enum */
typedef int CUfunction_attribute;     /* enum CUfunction_attribute_enum */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;

/* CUresult values that accy's runtime and fake driver name. */
enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};

/* Flags and attribute numbers. */
enum {
  CU_STREAM_NON_BLOCKING = 0x1,
  CU_EVENT_DISABLE_TIMING = 0x2,
  CU_MEM_ATTACH_GLOBAL = 0x1,

  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,

  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,

  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7,
};

/* X(symbol, return type, parameter list) for every driver entry point used. */
#define ACCY_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit, CUresult, (unsigned int flags))                                    \
  X(cuGetErrorName, CUresult, (CUresult error, const char **name))             \
  X(cuGetErrorString, CUresult, (CUresult error, const char **text))           \
  X(cuDeviceGet, CUresult, (CUdevice * device, int ordinal))                   \
  X(cuDeviceGetAttribute, CUresult,                                            \
    (int *value, CUdevice_attribute attribute, CUdevice device))               \
  X(cuDevicePrimaryCtxRetain, CUresult, (CUcontext * context, CUdevice device)) \
  X(cuCtxGetCurrent, CUresult, (CUcontext * context))                          \
  X(cuCtxSetCurrent, CUresult, (CUcontext context))                            \
  X(cuModuleLoadData, CUresult, (CUmodule * module, const void *image))        \
  X(cuModuleLoadDataEx, CUresult,                                              \
    (CUmodule * module, const void *image, unsigned int option_count,          \
     CUjit_option *options, void **option_values))                             \
  X(cuModuleUnload, CUresult, (CUmodule module))                               \
  X(cuModuleGetFunction, CUresult,                                             \
    (CUfunction * function, CUmodule module, const char *name))                \
  X(cuFuncSetAttribute, CUresult,                                              \
    (CUfunction function, CUfunction_attribute attribute, int value))          \
  X(cuLaunchKernel, CUresult,                                                  \
    (CUfunction function, unsigned int grid_x, unsigned int grid_y,            \
     unsigned int grid_z, unsigned int block_x, unsigned int block_y,          \
     unsigned int block_z, unsigned int shared_memory_bytes, CUstream stream,  \
     void **kernel_params, void **extra))                                      \
  X(cuStreamCreate, CUresult, (CUstream * stream, unsigned int flags))         \
  X(cuStreamDestroy_v2, CUresult, (CUstream stream))                           \
  X(cuStreamSynchronize, CUresult, (CUstream stream))                          \
  X(cuStreamWaitEvent, CUresult,                                               \
    (CUstream stream, CUevent event, unsigned int flags))                      \
  X(cuEventCreate, CUresult, (CUevent * event, unsigned int flags))            \
  X(cuEventDestroy_v2, CUresult, (CUevent event))                              \
  X(cuEventSynchronize, CUresult, (CUevent event))                             \
  X(cuEventRecord, CUresult, (CUevent event, CUstream stream))                 \
  X(cuMemAlloc_v2, CUresult, (CUdeviceptr * pointer, size_t bytes))            \
  X(cuMemAllocManaged, CUresult,                                               \
    (CUdeviceptr * pointer, size_t bytes, unsigned int flags))                 \
  X(cuMemFree_v2, CUresult, (CUdeviceptr pointer))                             \
  X(cuMemcpyAsync, CUresult,                                                   \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))         \
  X(cuMemsetD32Async, CUresult,                                                \
    (CUdeviceptr dst, unsigned int value, size_t count, CUstream stream))      \
  X(cuMemsetD16Async, CUresult,                                                \
    (CUdeviceptr dst, unsigned short value, size_t count, CUstream stream))    \
  X(cuMemHostRegister_v2, CUresult,                                            \
    (void *pointer, size_t bytes, unsigned int flags))                         \
  X(cuMemHostUnregister, CUresult, (void *pointer))

#endif /* ACCY_RUNTIME_NATIVE_CUDA_DRIVER_H */
