"""Declarative rules: YAML packs turn summary facts into candidate hypotheses with Amdahl bounds."""
