# Sourced from the repository root by the device scripts (scripts/gpu-check, hybrid-check, ab-bench, decode-profile,
# decode-plan-sweep, decode-small/run.sh): puts the CUDA runtime and cuBLAS on LD_LIBRARY_PATH, the
# machine's toolkit if it has one, else the libraries of PyTorch's nvidia wheels (the H200 image
# has only those), so binaries built on the build machine find them.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib $(python3 -c 'import nvidia, os; p = os.path.dirname(nvidia.__path__[0]); print(" ".join(os.path.join(p, "nvidia", s, "lib") for s in ("cublas", "cuda_runtime")))' 2>/dev/null); do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
: # the last test of the loop may be false: a script that sources this under set -e must not stop here
