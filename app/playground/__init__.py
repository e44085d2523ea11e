"""The Playground: edit Q, K, V (or X and W) and watch the five steps. model/ is Qt-free, qt/ draws the Steps view
and the panels, views/ holds the other views (one folder each), tab.py lays them out."""
