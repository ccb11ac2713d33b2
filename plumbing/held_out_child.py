# The child that asks the edited function: run as `python3 -I -c` with this file's text, in
# a folder holding path_rules.py and cases.json (plumbing/held_out.py). Never imported.
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
    cases = plan["cases"] if isinstance(plan, dict) else plan
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.path.insert(0, os.getcwd())

    def send(number, **answer):
        answers.write(json.dumps({"case": number, **answer}) + "\n")
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
        result = python_sources(first)
        if case.get("then") == "append":  # the caller changes the list it got back
            result.append("changed by the caller")
        elif case.get("then") == "clear":
            result.clear()
        else:  # the same list object, holding other paths
            first[:] = case["again_with"]
            return first, case["again_with"]
        return list(case["ask"]), case["ask"]

    kept = {}

    def answer(number, case):
        try:
            given, changed = prepared(case)
            result = python_sources(given)
            text = json.dumps(result)
            after = json.dumps(given)
        except BaseException as error:
            send(number, error=problem(error))
            return
        if not isinstance(case, dict):
            kept[number] = (result, text)
        changed_argument = {} if after == json.dumps(changed) else {"argument": json.loads(after)}
        send(number, answer=json.loads(text), **changed_argument)

    for number, case in enumerate(cases):
        if not isinstance(case, dict):
            answer(number, case)
    for number, (result, text) in kept.items():
        try:
            later = json.dumps(result)
        except BaseException as error:
            later = json.dumps(problem(error))
        if later != text:
            send(number, later=json.loads(later))
    for number, case in enumerate(cases):
        if isinstance(case, dict):
            answer(number, case)

    def again(phase, numbers, function):
        for number in numbers:
            try:
                text = json.dumps(function(list(cases[number])))
            except BaseException as error:
                send(number, phase=phase, error=problem(error))
                continue
            send(number, phase=phase, answer=json.loads(text))

    if isinstance(plan, dict):
        import ntpath

        kept_as = os.sep, os.altsep, os.path
        os.sep, os.altsep, os.path = "\\", "/", ntpath  # fnmatch reads os.path when called
        sys.modules["os.path"] = ntpath
        try:
            sys.modules.pop("path_rules", None)
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
