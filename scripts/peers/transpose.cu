// The peer of the transpose family, measured by the tour in the same run as the course's steps:
// NVIDIA cuBLAS's geam (C = alpha op(A) + beta op(B)) with A transposed, alpha = 1 and beta = 0,
// the library's out-of-place transpose.
//
// cuBLAS is column-major: the row-major rows x cols input is, to it, the cols x rows matrix A with
// leading dimension cols, and the row-major cols x rows output is the rows x cols matrix C with
// leading dimension rows. So C = A^T is geam(OP_T, OP_N, m = rows, n = cols). With beta = 0 cuBLAS
// does not read B; B = C with ldb = ldc is its documented in-place form, used here.
//
// One handle, created on the first call and kept; each call sets the caller's stream on it. A
// failure returns cudaErrorUnknown after printing cuBLAS's status once.
#include <climits>
#include <cstdio>

#include <cublas_v2.h>

#include "peers.cuh"

PEER int cublas_transpose_f32(const float* input, float* output, long long rows, long long cols,
                              void* stream)
{
    static cublasHandle_t handle = nullptr;
    static bool reported = false;
    if (rows <= 0 || cols <= 0 || rows > INT_MAX || cols > INT_MAX)
        return (int)cudaErrorInvalidValue;
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    if (handle == nullptr)
        status = cublasCreate(&handle);
    if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasSetStream(handle, (cudaStream_t)stream);
    const float one = 1.0f, zero = 0.0f;
    if (status == CUBLAS_STATUS_SUCCESS) {
        status = cublasSgeam(handle, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, (int)cols, &one, input,
                             (int)cols, &zero, output, (int)rows, output, (int)rows);
    }
    if (status != CUBLAS_STATUS_SUCCESS) {
        if (!reported)
            fprintf(stderr, "cublas_transpose_f32: %s\n", cublasGetStatusString(status));
        reported = true;
        return (int)cudaErrorUnknown;
    }
    return (int)cudaGetLastError();
}
