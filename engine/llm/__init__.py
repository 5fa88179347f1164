"""The optional LLM stage of `pa analyze`: ranks, refines and explains what the rules found.

Nothing here is imported on the deterministic path: `engine.report.llm_hook` imports
`engine.llm.stage` lazily, and only when the stage is enabled. See docs/llm.md.
"""
