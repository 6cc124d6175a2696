"""The results viewer (`lvu view`): a FastAPI app over the run store; see docs/viewer.md."""
