"""Analyst questions over the history: `dmf history`, `dmf asof`, `dmf report` and the product list."""
