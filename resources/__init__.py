"""Lessons, styles and icons, installed as the package ``app.resources`` (setup.py maps this folder there), so that
app/common/resources.py finds them through importlib.resources in a wheel and in an editable checkout alike."""
