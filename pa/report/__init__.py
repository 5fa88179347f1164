"""The report: assemble (ProfileSummary + rule result [+ LLM] → Report), validate, render.

The layers are kept apart so that a rendered report can only show what passed validation:
`assemble.build_report` makes the pydantic `Report`, `schema.validate_report` checks its JSON
against the published schema (a failure is a bug: InternalError, exit 3), and `render.render`
turns the validated JSON document into text, Markdown or HTML through the Jinja templates.
"""
