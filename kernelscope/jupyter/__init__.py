"""IPython glue for kernelscope: ``%load_ext kernelscope`` registers ``%%kernelprofile``."""


def load_ipython_extension(ipython):
    from kernelscope.jupyter.magics import KernelProfileMagics
    from kernelscope.jupyter.replay import track_cells
    ipython.register_magics(KernelProfileMagics)
    track_cells(ipython)    # which cells ran and succeeded: what %%kernelprofile --ncu replays
    arm_graph_watch(ipython)


def arm_graph_watch(ipython):
    """Turn the CUDA graph watch on (``ks.watch_graphs``) once torch is imported: now, or before
    the first cell that runs after the notebook imports it (loading the extension does not
    import torch)."""
    import sys

    def arm(*_):
        if "torch" not in sys.modules:
            return
        try:
            ipython.events.unregister("pre_run_cell", arm)
        except ValueError:
            pass
        from kernelscope.capture.graph_watch import watch_graphs
        watch_graphs()

    ipython.events.register("pre_run_cell", arm)
    arm()


def unload_ipython_extension(ipython):
    from kernelscope.jupyter.replay import untrack_cells
    untrack_cells(ipython)
