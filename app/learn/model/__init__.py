"""Learn mode's Qt-free engine: lesson files, schema, expressions, walking, links to Training and the Lab."""
