// The CUDA C++ source of saxpy_nvcc.ptx, which tests/external.rs loads as a module cuprum did
// not compile. Regenerate on a machine with the CUDA toolkit:
//   nvcc -ptx -arch=sm_80 saxpy.cu -o saxpy_nvcc.ptx
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

// A struct passed by value, to check parameters of other sizes.
struct Affine {
    float scale;
    float shift;
    unsigned long long count;
};

extern "C" __global__ void affine(Affine f, float *y) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < f.count) {
        y[i] = f.scale * y[i] + f.shift;
    }
}
