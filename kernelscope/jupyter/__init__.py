"""IPython glue for kernelscope: ``%load_ext kernelscope`` registers ``%%kernelprofile``."""


def load_ipython_extension(ipython):
    from kernelscope.jupyter.magics import KernelProfileMagics
    from kernelscope.jupyter.replay import track_cells
    ipython.register_magics(KernelProfileMagics)
    track_cells(ipython)    # which cells ran and succeeded: what %%kernelprofile --ncu replays


def unload_ipython_extension(ipython):
    from kernelscope.jupyter.replay import untrack_cells
    untrack_cells(ipython)
