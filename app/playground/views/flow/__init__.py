"""Flow: lines from each query to each key. model.py picks the Playground's weights; the drawing is
app/widgets/flow (Training and the Model tab draw their flows with it too)."""
