"""The optional LLM stage of `pa analyze`: ranks, refines and explains what the rules found.

Nothing of the stage is imported on the deterministic path: the pipeline imports `pa.llm.stage`
only when the stage is enabled; the report and compare layers import the stage's interface types
from `pa.llm.model`, which loads no client. See docs/llm.md.
"""
