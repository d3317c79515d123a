"""fusion_alias: an alias-aware fusion executor for Lightning Thunder."""
