"""What the history plots show besides the measurements: change points, baselines, commits.

- the x axis names the Fast DDS commit (short hash) before the run's date;
- a change point is a vertical line between the last run before and the first run after it, red
  for a regression and green for an improvement, with its size (the median over payloads on the
  plots of all payloads);
- each stored baseline (`perfgate history --baseline D`, the platform's and any release baseline)
  is a dotted horizontal line at its value, in the legend with its name;
- the A/B verdict of a commit (history_ab: the run against its parent) is a marker on the top edge
  of the plot at that commit: a red triangle down for a regression, a green triangle up for an
  improvement, an open grey circle when it passed, an orange cross when it could not decide.

MarkedHistoryFigures adds these to HistoryFigures' plots just before each is saved, so the
speed-minded drawing of the measured lines stays where it is.
"""
from __future__ import annotations

from datetime import datetime

from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from .common import FAILED_COLOUR, PASSED_COLOUR
from .history_plots import HistoryFigures, experiment_tick_labels

SHORT_HASH_CHARACTERS = 7  # git's own abbreviation
BASELINE_COLOURS = ("#9467bd", "#8c564b", "#e377c2", "#17becf")  # first the platform's, then release ones
AB_TITLE_PAD = 11  # points: the title above the A/B markers on the plot's top edge
# A/B outcome -> (marker, face colour, edge colour, size), in history_ab.OUTCOMES order
AB_STYLES = {"regression": ("v", FAILED_COLOUR, FAILED_COLOUR, 8), "improvement": ("^", PASSED_COLOUR, PASSED_COLOUR, 8),
             "incomplete": ("x", "#ff7f0e", "#ff7f0e", 7), "passed": ("o", "none", "#7f7f7f", 6)}


def commit_tick_labels(created: list[datetime | None], labels: list[str], commits: list[str | None],
                       versions: list[str | None] | None = None) -> list[str]:
    """`<short hash> <date>` per experiment; where no commit is recorded (the system's package),
    `v<version> <date>`, so that every tick says which Fast DDS it measured; the date (or short label)
    alone where neither is recorded."""
    dates = experiment_tick_labels(created, labels)
    versions = versions or [None] * len(dates)
    return [f"{commit[:SHORT_HASH_CHARACTERS]} {date}" if commit else f"v{version} {date}" if version else date
            for commit, version, date in zip(commits, versions, dates)]


class MarkedHistoryFigures(HistoryFigures):
    """HistoryFigures with change points, baselines and A/B verdicts. `changes`: (first position after the
    change, change in %); `baselines`: (name, value) in the order of `--baseline`; `ab`: (position,
    outcome, text) of history_ab.marks."""

    def __init__(self, tick_labels: list[str]):
        super().__init__(tick_labels)
        self._marks: list = []  # the payload figure's marks, removed before the next payload is drawn
        self._pending: tuple = ((), (), (), False)

    def magnitude(self, sub, magnitude, values, path, changes=(), ab=()):
        self._pending = (changes, (), ab, False)
        return super().magnitude(sub, magnitude, values, path)

    def payload(self, sub, magnitude, payload, values, requirement, above, path, changes=(), baselines=(), ab=()):
        for artist in self._marks:
            artist.remove()
        self._marks = []
        self._pending = (changes, baselines, ab, True)
        return super().payload(sub, magnitude, payload, values, requirement, above, path)

    def _decorate(self, axes) -> None:
        changes, baselines, ab, is_payload = self._pending
        marks = []
        count = len(self.tick_labels)
        axes.set_xlabel(f"Fast DDS commit and run date, commit by commit ({count} experiments)")
        between = blended_transform_factory(axes.transData, axes.transAxes)
        for position, change in changes:
            colour = FAILED_COLOUR if change > 0 else PASSED_COLOUR
            marks.append(axes.axvline(position - 0.5, color=colour, linewidth=1.3, alpha=0.85, zorder=1))
            marks.append(axes.text(position - 0.5, 0.03, f" {change:+.1f} % from {self.tick_labels[position]} ",
                                       transform=between, ha="right", va="bottom", fontsize=8, color=colour,
                                       bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1}))
        for (name, value), colour in zip(baselines, BASELINE_COLOURS):
            marks.append(axes.axhline(value, color=colour, linestyle=":", linewidth=1.5, zorder=1))
        marks += self._ab_marks(axes, ab)
        if is_payload:
            self._fit_baselines([value for _, value in baselines[:len(BASELINE_COLOURS)]])
            self._payload_legend(changes, baselines, ab, marks)
            self._marks = marks
        elif ab:  # below the payload legend, outside the plot on the right
            axes.add_artist(axes.get_legend())
            handles, labels = self._ab_legend(ab)
            axes.legend(handles, labels, title="A/B vs parent", fontsize=8, title_fontsize=8, loc="lower left",
                        bbox_to_anchor=(1.01, 0.0), frameon=False)

    @staticmethod
    def _ab_marks(axes, ab) -> list:
        """One marker per A/B outcome kind, on the top edge (outside the data, under the title)."""
        top = blended_transform_factory(axes.transData, axes.transAxes)
        artists = []
        if ab:  # room for the markers between the plot and its title
            axes.set_title(axes.get_title(), pad=AB_TITLE_PAD, y=1.0)
        for outcome, (marker, face, edge, size) in AB_STYLES.items():
            positions = [position for position, kind, _ in ab if kind == outcome]
            if positions:
                (line,) = axes.plot(positions, [1.0] * len(positions), transform=top, linestyle="none", marker=marker,
                                    markersize=size, markerfacecolor=face, markeredgecolor=edge, clip_on=False,
                                    zorder=5)
                artists.append(line)
        return artists

    @staticmethod
    def _ab_legend(ab) -> tuple[list, list]:
        handles, labels = [], []
        for outcome, (marker, face, edge, size) in AB_STYLES.items():
            count = sum(1 for _, kind, _ in ab if kind == outcome)
            if count:
                handles.append(Line2D([], [], linestyle="none", marker=marker, markersize=size, markerfacecolor=face,
                                      markeredgecolor=edge))
                labels.append(f"A/B {outcome} ({count})")
        return handles, labels

    def _fit_baselines(self, values: list[float]) -> None:
        """Widen the y range so that every baseline line is inside it (linear axis)."""
        if not values or self.payload_axes.get_yscale() != "linear":
            return
        low, high = self.payload_axes.get_ylim()
        pad = 0.05 * (high - low)
        self.payload_axes.set_ylim(min(low, min(values) - pad), max(high, max(values) + 3 * pad))

    def _payload_legend(self, changes, baselines, ab, marks) -> None:
        """The base legend's entries (their texts kept up to date by HistoryFigures) plus ours."""
        axes = self.payload_axes
        handles = [self.measured_line, self.requirement_line, self.above_points]
        handles += [self.bucket_line] if self.bucket > 1 else []  # the base legend's, in its order
        labels = [text.get_text() for text in self.legend.get_texts()]
        for (name, value), colour in zip(baselines, BASELINE_COLOURS):
            handles.append(Line2D([], [], color=colour, linestyle=":", linewidth=1.5))
            labels.append(f"baseline {name} {value:.3f} us")
        for kind, colour, present in (("regression", FAILED_COLOUR, any(c > 0 for _, c in changes)),
                                      ("improvement", PASSED_COLOUR, any(c < 0 for _, c in changes))):
            if present:
                handles.append(Line2D([], [], color=colour, linewidth=1.3))
                labels.append(f"change point: {kind}")
        ab_handles, ab_labels = self._ab_legend(ab)
        handles += ab_handles
        labels += ab_labels
        # two columns: narrow enough to leave the verdict in the upper left corner readable
        legend = axes.legend(handles, labels, fontsize=8, loc="upper right", ncol=2, borderaxespad=0.3)
        marks.append(legend)
