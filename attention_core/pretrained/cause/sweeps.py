"""What a patching sweep patches, by name: no torch here, so the command line can list and check the sweeps (its
``--sweep`` choices) before it imports anything heavy, and ``patching`` reads the same table."""

SWEEPS = {"resid": ("resid_pre", ("layer", "position")), "attn_out": ("attn_out", ("layer", "position")),
          "mlp_out": ("mlp_out", ("layer", "position")), "heads": ("z", ("layer", "head")),
          "heads_by_position": ("z", ("layer", "head", "position")), "q": ("q", ("layer", "head")),
          "k": ("k", ("layer", "kv_head")), "v": ("v", ("layer", "kv_head"))}
"""sweep → (the site it patches, the result's axes). ``heads``: one head's z at every position (TransformerLens's
``attn_head_out_all_pos``); ``q``/``k``/``v``: one head's query/key/value input at every position (on a
grouped-query model k and v count key/value heads: ``Patching.feeds`` names the query heads each one serves)."""
