"""Cause: what the residual stream predicts at each half-layer, and which component wrote a prediction.

Each reads the forward pass's named sites (``PretrainedModel.run_with``: ``resid_pre.L``, ``attn_out.L``,
``z.L``, ``mlp_out.L``, ``resid_post.L``) and never runs a pass of its own.

- ``lens``: ``logit_lens(model, text, position=, top_k=) -> LogitLens``: every half-layer's residual state read
  through the model's own final norm and unembedding (``ForwardPass.logits``, so a masked-LM head's transform and
  Gemma 2's final soft-cap are applied as for the real logits).
- ``attribution``: ``attribute(model, text, target=, foil=, position=) -> Attribution``: direct logit
  attribution, the logit (difference) split exactly into embedding, heads, MLPs and biases with every norm on the
  path frozen at its clean scale (float64).
- ``targets``: what they share: a token given as an id or a one-token string, and a position in range, refused
  with a ``ValueError`` naming the problem before any work.

``PretrainedModel.logit_lens`` and ``PretrainedModel.attribute`` are the public doors; ``LogitLens`` and
``Attribution`` are exported by ``attention_core.pretrained``. Names are imported from the module defining them
(this package re-exports nothing).
"""
