"""Where the project's own files live (functions, ready workloads, the schema, the docs)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR = REPO_ROOT / "functions"
WORKLOAD_CONFIGS_DIR = REPO_ROOT / "workload_configs"
WORKLOAD_SCHEMA_PATH = WORKLOAD_CONFIGS_DIR / "schema.json"
DOCS_DIR = REPO_ROOT / "docs"
