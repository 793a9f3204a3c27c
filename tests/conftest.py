import os

# Set before anything imports TensorFlow/RETURNN: this machine has nvcc, so RETURNN would otherwise try to compile its
# native ops with CUDA and fail; and TF's C++ logging would flood the output.
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
