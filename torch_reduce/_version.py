# The release number, in one place: setup.py reads it and adds a local tag
# naming the torch and CUDA of the build (torch_reduce.__version__).
__version__ = "0.2.0"
