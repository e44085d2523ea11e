"""The window's tabs after the Playground, each held by a host made on first use (``DeferredHosts``,
app/widgets/tab_host.py): the tab bar shows their titles from the first frame; a host (its module, its model,
whatever they import) is made when its tab is chosen or the window's attribute for it is first read. The order
here is the tab bar's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from app.widgets.tab_host import DeferredHosts

if TYPE_CHECKING:
    from app.experiments.qt.host import ExperimentsHost
    from app.lab.qt.host import LabHost, LabWindow
    from app.model_tab.qt.host import InspectHost, ModelTabWindow
    from app.training.model.session import TrainingSession
    from app.training.qt.host import TrainingHost
    from app.training.qt.panel import TrainingPanel

    class TabsWindow(LabWindow, ModelTabWindow, Protocol):
        """What the window hands its hosts: each takes the narrow part it needs (``HostWindow``, ``LabWindow``,
        ``ModelTabWindow``); the Training panel's options are passed on as its host's constructor options."""

        warm_up_torch: bool
        preview_untrained: bool


def add_hosts(window: TabsWindow) -> DeferredHosts:
    """Training, Experiments, Lab and Model placeholders in ``window.tabs``, their hosts made on first use."""
    hosts = DeferredHosts(window)

    def training(holder: Any) -> TrainingHost:
        from app.training.qt.host import TrainingHost  # app/training/qt/host.py

        return TrainingHost(window, holder, warm_up_torch=window.warm_up_torch,
                            preview_untrained=window.preview_untrained)

    def experiments(holder: Any) -> ExperimentsHost:
        from app.experiments.qt.host import ExperimentsHost  # app/experiments/qt/host.py

        return ExperimentsHost(window, holder)

    def lab(holder: Any) -> LabHost:
        from app.lab.qt.host import LabHost  # app/lab/qt/host.py

        return LabHost(window, holder)

    def inspect(holder: Any) -> InspectHost:
        from app.model_tab.qt.host import InspectHost  # app/model_tab/qt/host.py: a real model, head by head

        return InspectHost(window, holder)

    hosts.add("training", "Training", training)
    hosts.add("experiments", "Experiments", experiments)
    hosts.add("lab", "Lab", lab)
    hosts.add("inspect", "Model", inspect)
    return hosts


class HostAttributes:
    """The hosts as the window's attributes (scripts' and tests' names), each made when first read."""

    hosts: DeferredHosts

    @property
    def training_host(self) -> TrainingHost:
        return self.hosts.get("training")

    @property
    def training(self) -> TrainingSession:
        """The Training tab's ``TrainingSession``: scripts' ``w.training``."""
        return self.training_host.model

    @property
    def training_panel(self) -> TrainingPanel:
        """The Training tab's panel, created on first use (it imports torch)."""
        return self.training_host.tab

    @property
    def experiments(self) -> ExperimentsHost:
        return self.hosts.get("experiments")

    @property
    def lab(self) -> LabHost:
        return self.hosts.get("lab")

    @property
    def inspect(self) -> InspectHost:
        return self.hosts.get("inspect")
