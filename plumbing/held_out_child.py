# The child that asks the edited function: run as `python3 -I -c` with this file's text, in
# a folder holding path_rules.py (and a task's helper modules) and cases.json
# (plumbing/held_out.py). Never imported.
#
# It reads its inputs before importing the edited module, and answers on its own copy of
# stdout: what the edited code prints goes to stderr. Each answer is labelled with its case,
# so a stray line cannot shift the others; it says when the list it was given came back
# changed. Once every plain case is asked, it checks that no later call changed an earlier
# answer; then what callers do (a case that is a dict); with today's plan (cases.json a
# dict), it asks some cases again as on Windows, from a fresh import of the module, and
# again from a folder of decoys; then it says it has ended: without that line, no case
# passes. Its names live inside a function, so the edited code finds little in __main__ to
# tell it is checked.
def ask():
    import json
    import os
    import sys

    with open("cases.json", encoding="utf-8") as given:
        plan = json.load(given)
    planning = isinstance(plan, dict)  # today's plan: its defences below too
    cases = plan["cases"] if planning else plan
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.path.insert(0, os.getcwd())
    # subtle: the modules imported again as on Windows are named by the files here before
    # the edited code runs, not by their `__file__`, which it can set: a path_rules.py saying
    # it lives elsewhere, or deleting itself, would be kept as imported at home
    beside = {"path_rules"} | {name[:-3] for name in os.listdir() if name.endswith(".py")}
    # subtle: the JSON the comparisons read is made by an encoder taken before the edited
    # module can replace json.dumps, and compared only as exact text (a str subclass could
    # say it equals anything)
    dumps, loads = json.JSONEncoder().encode, json.JSONDecoder().decode

    def same(text, other):
        return type(text) is str and type(other) is str and text == other

    def send(number, **answer):
        answers.write(dumps({"case": number, **answer}) + "\n")
        answers.flush()

    def problem(error):
        return f"{type(error).__name__}: {error}"[:200]

    try:
        from path_rules import python_sources
    except BaseException as error:
        for number in range(len(cases)):
            send(number, error=f"importing path_rules failed: {problem(error)}")
        return

    def prepared(case):
        if not isinstance(case, dict):
            return list(case), case
        first = list(case["ask"])
        for _ in range(case.get("times", 1)):  # asked, and the answer changed, that often
            result = python_sources(first)
            if case.get("then") == "append":  # the caller changes the list it got back
                result.append("changed by the caller")
            elif case.get("then") == "clear":
                result.clear()
            else:  # the same list object, holding other paths
                first[:] = case["again_with"]
                return first, case["again_with"]
            first = list(case["ask"])
        return list(case["ask"]), case["ask"]

    kept, passed, given_back = {}, {}, {}

    def answer(number, case):
        try:
            given, changed = prepared(case)
            result = python_sources(given)
            text = dumps(result)
            after = dumps(given)
        except BaseException as error:
            send(number, error=problem(error))
            return
        if planning and (result is given or id(result) in given_back):  # a caller's change
            # to it would reach the function's own list, or another caller's
            shared = "the list it was given" if result is given else "a list it gave back before"
            send(number, answer=loads(text), shared=shared)
            return
        if planning:
            given_back[id(result)] = result  # kept alive, so no other object takes its id
        if not isinstance(case, dict):
            kept[number] = (result, text)
            passed[number] = (given, dumps(changed))
        changed_argument = {} if same(after, dumps(changed)) else {"argument": loads(after)}
        send(number, answer=loads(text), **changed_argument)

    away = set(plan.get("away", ())) if planning else set()  # asked only as on Windows
    for number, case in enumerate(cases):
        if not isinstance(case, dict) and number not in away:
            answer(number, case)

    def dumped(value):  # its JSON as a later look finds it, or the error's
        try:
            return dumps(value)
        except BaseException as error:
            return dumps(problem(error))

    for number, (result, text) in kept.items():
        later = dumped(result)
        if not same(later, text):
            send(number, later=loads(later))
        elif planning:  # ... nor the list its caller passed
            given, passed_text = passed[number]
            now = dumped(given)
            if not same(now, passed_text):
                send(number, later_argument=loads(now))
    for number, case in enumerate(cases):
        if isinstance(case, dict):
            answer(number, case)

    def again(phase, numbers, function):
        for number in numbers:
            try:
                text = dumps(function(list(cases[number])))
            except BaseException as error:
                send(number, phase=phase, error=problem(error))
                continue
            send(number, phase=phase, answer=loads(text))

    if isinstance(plan, dict):
        import ntpath

        kept_as = os.sep, os.altsep, os.path
        os.sep, os.altsep, os.path = "\\", "/", ntpath  # fnmatch reads os.path when called
        sys.modules["os.path"] = ntpath
        try:
            for name in beside:  # path_rules, and a task's helper modules beside it
                sys.modules.pop(name, None)
            from path_rules import python_sources as on_windows  # what it read at import too

            again("windows", plan["windows"], on_windows)
        except BaseException as error:  # the import: every case asked there fails
            for number in plan["windows"]:
                send(number, phase="windows", error=f"importing path_rules: {problem(error)}")
        finally:
            os.sep, os.altsep, os.path = kept_as
            sys.modules["os.path"] = kept_as[2]
        os.chdir(plan["decoys"])  # subtle: if this fails, no folder case has an answer
        again("folder", plan["folder"], python_sources)
    send(len(cases), end=True)


ask()
