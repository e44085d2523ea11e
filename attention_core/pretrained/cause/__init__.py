"""Cause: what the residual stream predicts, which component wrote a prediction, and what an intervention changes.

Each reads (or, to intervene, replaces) the forward pass's named sites (``PretrainedModel.run_with``,
``sites.Hooks``: ``resid_pre.L``, ``attn_out.L``, ``z.L``, ``mlp_out.L``, ``resid_post.L``, ...).

- ``lens``: ``logit_lens(model, text, position=, top_k=) -> LogitLens``: every half-layer's residual state read
  through the model's own final norm and unembedding (``ForwardPass.logits``, so a masked-LM head's transform and
  Gemma 2's final soft-cap are applied as for the real logits).
- ``attribution``: ``attribute(model, text, target=, foil=, position=) -> Attribution``: direct logit
  attribution, the logit (difference) split exactly into embedding, heads, MLPs and biases with every norm on the
  path frozen at its clean scale (float64).
- ``patching``: ``patch(model, clean, corrupted, target=, foil=, position=, sweep=) -> Patching`` (activation
  patching by denoising: one clean activation put into the corrupted run per cell, batched, restarted at the
  patched layer) and ``path_patch(...) -> PathPatching`` (the senders' clean output reaching only the receivers'
  q/k/v): writers of the sites ``resid_pre``, ``attn_out``, ``mlp_out``, ``z``, ``q``, ``k``, ``v``.
- ``knockout``: ``knockout(model, text, edges, layers=) -> Knockout``: query → key cells blocked before the softmax
  in chosen layers or heads, the next-token distribution before and after.
- ``importance``: ``value_norms`` (‖α_ij · v_j · W_O^h‖, ``Trace.value_norms``), ``value_vectors`` and ``rollout``
  (``Trace.rollout()``): computed from a trace's maps, v and the model's W_O.
- ``qk``: ``qk_attribution(model, text, layer, head, query, key) -> QKTerms``: one attention score split into
  (query source × key source) terms, every norm on the way frozen, each source rotated by its own position.
- ``sweeps``: ``SWEEPS``, each patching sweep's site and axes, torch-free (the command line's ``--sweep``).
- ``targets``: what they share: a token given as an id or a one-token string, and a position in range, refused
  with a ``ValueError`` naming the problem before any work.

``PretrainedModel.logit_lens``, ``.attribute``, ``.patch``, ``.path_patch``, ``.knockout`` and ``.qk_attribution``
are the public doors; their results are exported by ``attention_core.pretrained``. Names are imported from the
module defining them (this package re-exports nothing).
"""
