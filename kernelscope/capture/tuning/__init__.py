"""What produced each kernel and what else was tried, collected in the process while a region runs.

Three sources, each feature-detected (a Triton or torch without one of these attributes loses
that source and says so in ``meta["tuning"]["notes"]``; nothing here fails a capture), one
module each, composed by :class:`TuningWatch` (:mod:`.watch`, with :func:`attach_tuning`):

- :mod:`.triton`: Triton's ``@triton.autotune`` (``Autotuner.run``, wrapped on the class until an
  autotuner's first launch, then its ``cache``, ``_bench`` and ``prune_configs`` where it tunes)
  and ``JITFunction.run`` (each function launched; its compiled variants, :mod:`.variants`, become
  rows of the ``variants`` table).
- :mod:`.inductor`: Inductor's max-autotune (``add_feedback_saver``: every choice's time;
  ``AlgorithmSelectorCache.benchmark_choice``: each choice timed inside a profiler range that
  names it), its compiled kernels (``PyCodeCache``), each winning template tied to its compiled
  ``triton_tem_*`` kernel.
- :mod:`.helion`: Helion's search (``BaseSearch.benchmark_batch``).

:mod:`.common` holds what they share (a config as text, the region's :class:`WatchState`).
Only names, numbers and strings are kept (no references to kernels or tensors outlive the region).
"""
from kernelscope.capture.tuning.common import FAILED, WatchState, config_text
from kernelscope.capture.tuning.inductor import (
    EXTERN,
    EXTERN_WINNER,
    FROM_BINARY,
    FROM_CHOICE,
    FROM_LAUNCHER,
    NO_TEMPLATE_KERNEL,
    NOT_COMPILED,
    RAN_OTHERWISE,
    SAME_WINNER,
    TEMPLATE_KNOBS,
    choice_note,
    link_template_winners,
    origins_of_source,
    template_constexprs,
    template_resources,
)
from kernelscope.capture.tuning.triton import PRUNED_TO_ONE
from kernelscope.capture.tuning.variants import compiled_variants, declared_constexprs
from kernelscope.capture.tuning.watch import MAX_CANDIDATES, TuningWatch, attach_tuning

__all__ = [
    "EXTERN", "EXTERN_WINNER", "FAILED", "FROM_BINARY", "FROM_CHOICE", "FROM_LAUNCHER", "MAX_CANDIDATES",
    "NOT_COMPILED", "NO_TEMPLATE_KERNEL", "PRUNED_TO_ONE", "RAN_OTHERWISE", "SAME_WINNER", "TEMPLATE_KNOBS",
    "TuningWatch", "WatchState", "attach_tuning", "choice_note", "compiled_variants", "config_text",
    "declared_constexprs", "link_template_winners", "origins_of_source", "template_constexprs",
    "template_resources",
]
