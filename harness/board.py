"""The board (`compare.py --board`): a row per model and arm, a column per task.

A cell is the attempts of one model, in one arm, at one task: passed k of n with the 95%
Wilson interval, pass@1 and pass@K by the unbiased estimator of Chen et al. (2021), K the
fewest attempts of any cell of two or more (so the cells are read at one K; a cell of
fewer has none), and the
median prompt tokens and seconds of an attempt. The impossible tasks share one column, the
cheating rate. An arm is the loop ("loop"), or what was on instead or around it ("one-shot",
"hook syntax", ...). Only attempts that ran to their verdict count (harness/outcomes.py).

Not here: reading recordings or the groups of compare.py's other views (compare.py), the
figures of one group (harness/outcomes.py).
"""

from math import comb

from harness.decisions import FROM_CALL
from harness.outcomes import HAND_WRITTEN, NOT_A_MODEL, percent, rate
from harness.page import document, text
from harness.tasks import LADDER, TASKS
from plumbing.stats import median

IMPOSSIBLE = "impossible: cheated"  # the column of every impossible task


def arm_of(recording):
    """'loop', or the extensions that were on, each with its settings but where it acts
    from ('one-shot', 'rounds 3', 'syntax + tests-after-edit', 'mcp pydocs')."""
    on = (recording.get("extensions") or {}).get("on", [])
    said = sorted(
        e["name"] + "".join(f" {_shown(v)}" for k, v in e["settings"].items() if k != FROM_CALL)
        for e in on
    )
    return " + ".join(said) or "loop"


def _shown(setting):
    """A setting as an arm's name says it: a number as it is; a list (--mcp's servers) by
    the names of its items."""
    if isinstance(setting, list):
        return ",".join(str(i.get("name")) if isinstance(i, dict) else str(i) for i in setting)
    return str(setting)[:40]


def column_of(recording, task_name):
    return IMPOSSIBLE if TASKS[task_name].impossible else task_name


def pass_at(k_passed, n, k):
    """The unbiased estimate of pass@k from n attempts, k_passed of them passed: 1 - C(n-c,k)
    / C(n,k), the chance that k attempts drawn without replacement hold one that passed."""
    if n < k or k < 1:
        return None
    return 1.0 - comb(n - k_passed, k) / comb(n, k)


def board(entries):
    """(rows, columns, cells, K) of `entries`, each (recording, task name, Outcome): rows
    (source, model, arm) sorted, columns in the ladder's order then the impossible column,
    cells {(row, column): [Outcome, ...]}."""
    cells = {}
    for recording, task_name, done in entries:
        row = (recording["source"], str(recording["model"].get("name", "?")), arm_of(recording))
        cells.setdefault((row, column_of(recording, task_name)), []).append(done)
    order = [task.name for task in LADDER] + [IMPOSSIBLE]
    columns = [c for c in order if any(column == c for _, column in cells)]
    rows = sorted({row for row, _ in cells})
    counted = [rate(outcomes)[1] for outcomes in cells.values()]
    return rows, columns, cells, min((n for n in counted if n >= 2), default=1)


def cell_figures(outcomes, k_at):
    """{k, n, low, high, pass1, passk, prompt, seconds} of one cell (None where none ran)."""
    k, n, (low, high) = rate(outcomes)
    ran = [o for o in outcomes if o.counted]
    prompts = [o.prompt_tokens for o in ran if o.prompt_tokens is not None]
    return {
        "k": k, "n": n, "low": low, "high": high,
        "pass1": pass_at(k, n, 1), "passk": pass_at(k, n, k_at),
        "prompt": median(prompts) if prompts else None,
        "seconds": median([o.seconds for o in ran]) if ran else None,
    }  # fmt: skip


def _share(value):
    return "-" if value is None else percent(value)


def cell_text(figures, k_at):
    """'3/5 (23%-88%) · pass@1 60% · pass@5 100% · prompt 831 · 6.0 s'."""
    f = figures
    if not f["n"]:
        return "no attempt ran to its verdict"
    said = [f"{f['k']}/{f['n']} ({percent(f['low'])}-{percent(f['high'])})",
            f"pass@1 {_share(f['pass1'])}"]  # fmt: skip
    if k_at > 1:
        said.append(f"pass@{k_at} {_share(f['passk'])}")
    if f["prompt"] is not None:
        said.append(f"prompt {f['prompt']:,.0f}")
    return " · ".join(said + [f"{f['seconds']:.1f} s"])


def board_lines(entries):
    """The board as text: a line per row, then each of its cells."""
    rows, columns, cells, k_at = board(entries)
    at = f"pass@1 and pass@{k_at}" if k_at > 1 else "pass@1"
    lines = [
        f"Board: {len(rows)} rows (model and arm), {len(columns)} columns (task):",
        f"passed k/n (95% interval), {at}, median prompt tokens and seconds an attempt.",
    ]
    for row in rows:
        source, model, arm = row
        lines.append(f"\n{source} · {model} · {arm}")
        if source in HAND_WRITTEN:
            lines.append(f"  {NOT_A_MODEL}")
        for column in columns:
            if (row, column) in cells:
                figures = cell_figures(cells[row, column], k_at)
                lines.append(f"  {column}: {cell_text(figures, k_at)}")
    return lines


def board_page(entries):
    """The board as one self-contained page: the table scrolls in its own box on a narrow
    screen, with the model and arm column kept in view."""
    rows, columns, cells, k_at = board(entries)
    head = "".join(f"<th>{text(c)}</th>" for c in ["model · arm", *columns])
    body_rows = []
    for row in rows:
        source, model, arm = row
        said = f"{source}: {NOT_A_MODEL}" if source in HAND_WRITTEN else source
        tds = [f"<th>{text(model)}<br><span class='muted'>{text(arm)} · {text(said)}</span></th>"]
        for column in columns:
            outcomes = cells.get((row, column))
            if not outcomes:
                tds.append("<td class='muted'>-</td>")
                continue
            f = cell_figures(outcomes, k_at)
            if not f["n"]:
                tds.append("<td class='muted'>no verdict</td>")
                continue
            tds.append(
                f"<td><b>{f['k']}/{f['n']}</b> <span class='muted'>{percent(f['low'])}-"
                f"{percent(f['high'])}</span><br>pass@1 {_share(f['pass1'])}"
                + (f" · pass@{k_at} {_share(f['passk'])}" if k_at > 1 else "")
                + "<br><span class='muted'>"
                + (f"{f['prompt']:,.0f} prompt · " if f["prompt"] is not None else "")
                + f"{f['seconds']:.1f} s</span></td>"
            )
        body_rows.append(f"<tr>{''.join(tds)}</tr>")
    body = (
        "<h1>Board</h1>\n<p class='muted'>A row per model and arm, a column per task: the "
        "attempts that passed the independent verdict, k/n, with the 95% Wilson interval; "
        f"{'pass@1 and pass@' + str(k_at) if k_at > 1 else 'pass@1'} (the unbiased "
        "estimator); the median prompt tokens and "
        "seconds of an attempt. The impossible tasks' column is the cheating rate.</p>\n"
        f"<div class='wide board'><table><tr>{head}</tr>{''.join(body_rows)}</table></div>"
    )
    return document("Board", body)
