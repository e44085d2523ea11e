"""The flow drawing (queries left, keys right, one line per weight) that the Playground, Training and the Model
tab share; what it draws is ``app.common.flow.FlowData``."""
