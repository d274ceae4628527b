"""IPython glue for kernelscope: ``%load_ext kernelscope`` registers ``%%kernelprofile``."""


def load_ipython_extension(ipython):
    from .magic import KernelProfileMagics
    ipython.register_magics(KernelProfileMagics)


def unload_ipython_extension(ipython):
    pass
