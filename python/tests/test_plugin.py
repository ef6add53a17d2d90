"""The pytest plugin: scenario directories as tests, and the lockstep_scenario fixture."""

from __future__ import annotations

import textwrap

from test_scenario import SMALL

PLUGIN = ("-p", "lockstep.pytest_plugin")


def write(dir_, name, text):
    path = dir_ / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_scenarios_become_items_per_seed(pytester):
    write(pytester.path, "scen/a.yaml", SMALL)
    write(pytester.path, "scen/nested/b.yaml", SMALL.replace("py-tp2", "py-tp2-b"))
    result = pytester.runpytest(*PLUGIN, "--lockstep-scenarios", "scen", "--lockstep-seeds", "2",
                                "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["scen/a.yaml::py-tp2[[]seed=1[]] PASSED*",
                                 "scen/a.yaml::py-tp2[[]seed=2[]] PASSED*",
                                 "scen/nested/b.yaml::py-tp2-b[[]seed=2[]] PASSED*"])


def test_unexpected_verdict_fails_with_the_explanation(pytester):
    # Expecting a hang from a clean run: the item fails and says why.
    write(pytester.path, "scen/wrong.yaml", SMALL.replace("expect: clean", "expect: hang"))
    result = pytester.runpytest(*PLUGIN, "--lockstep-scenarios", "scen")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*verdict: clean (expected hang - NOT AS EXPECTED)*",
                                 "*replay: lockstep sim *wrong.yaml --seed 1*"])


def test_the_catalogue_is_collected_and_holds(pytester, scenarios_dir):
    # Every scenario of the catalogue, faults/ and hw/ included, is an item
    # that gives its expected verdict under the reference policy.
    files = [p for p in scenarios_dir.rglob("*.yaml")]
    assert len(files) > 100
    result = pytester.runpytest(*PLUGIN, "--lockstep-scenarios", str(scenarios_dir))
    result.assert_outcomes(passed=len(files))


def test_mutant_policy_fails_a_scenario(pytester, scenarios_dir):
    target = scenarios_dir / "faults" / "tp8-capacity-view.yaml"
    result = pytester.runpytest(*PLUGIN, "--lockstep-scenarios", str(target),
                                "--lockstep-policy", "capacity-from-local-view")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*verdict: hang*", "*--policy capacity-from-local-view*"])


def test_bad_yaml_is_a_failing_item_with_file_line_key(pytester):
    write(pytester.path, "scen/bad.yaml", SMALL.replace("steps: 1", "steps: -3"))
    result = pytester.runpytest(*PLUGIN, "--lockstep-scenarios", "scen")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ScenarioError: *bad.yaml:6: workload.steps:*"])


def test_missing_directory_is_a_usage_error(pytester):
    result = pytester.runpytest(*PLUGIN, "--lockstep-scenarios", "nowhere")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--lockstep-scenarios nowhere: no such file or directory*"])


def test_fixture_loads_edits_and_runs(pytester):
    write(pytester.path, "data/small.yaml", SMALL)
    pytester.makepyfile(test_fixture=textwrap.dedent("""
        import lockstep

        def test_load_and_run(lockstep_scenario):
            s = lockstep_scenario("data/small.yaml", workload={"steps": 2})
            assert s.steps == 2 and s.name == "py-tp2"
            report = lockstep_scenario.run(s, seed=4)
            assert report.verdict == "clean", report.explanation

        def test_from_dict_and_yaml(lockstep_scenario):
            s = lockstep_scenario(yaml=open("data/small.yaml").read())
            d = s.to_dict()
            d["name"] = "from-dict"
            assert lockstep_scenario(d).name == "from-dict"
            assert lockstep_scenario.run(d).as_expected
    """))
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=2)
