"""HTTP-level fakes of the LLM providers' APIs, for tests (no network)."""
