"""Help → How to use: the window's keys and gestures in one short text (tests check it names every teacher tool)."""

HELP_TEXT = (
    "• Edit a cell: type a number, Enter or Tab. Ctrl+drag or Ctrl+↑/↓ scrubs a value.\n"
    "• Paste a block from a spreadsheet with Ctrl+V; copy with Ctrl+C.\n"
    "• Hover any heatmap cell to see its formula; click to pin it.\n"
    "• Export button (or right-click) on a map: PNG, SVG, PDF or CSV; File → Export all steps.\n"
    "• F11: presentation mode (full screen, larger fonts, side panels hidden; Esc returns). Ctrl+= / Ctrl+- zoom;\n"
    "  double-click a map to show it alone (← → step, Esc returns).\n"
    "• Help → Lessons: guided lessons in the Learn dock. Teachers: File → Open lesson…, Save state as lesson step….\n"
    "• Ctrl+Z / Ctrl+Shift+Z undo and redo every edit.\n"
    "• Mask 'custom': click a cell in ③ or ④ to block it.")
