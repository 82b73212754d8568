"""The paths the code tools never write (the sandbox's mounts are tested in test_sandbox.py,
which also checks that the code tools refuse every one of them)."""

from __future__ import annotations

from iota.sandbox.protected import is_protected, protected_paths


def test_the_list_names_git_submodules_project_config_and_iotas_home(tmp_path, fake_home):
    root = tmp_path / "proj"
    for gitdir in ("lib/json", "lib/json/modules/inner", "docs"):
        (root / ".git" / "modules" / gitdir).mkdir(parents=True)
        (root / ".git" / "modules" / gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "modules" / "lib" / "json" / "objects").mkdir()
    modules = root / ".git" / "modules"
    assert protected_paths(root) == (
        str(root / ".git" / "hooks"), str(root / ".git" / "config"),
        str(modules / "docs" / "hooks"), str(modules / "docs" / "config"),
        str(modules / "lib/json" / "hooks"), str(modules / "lib/json" / "config"),
        str(modules / "lib/json/modules/inner" / "hooks"), str(modules / "lib/json/modules/inner" / "config"),
        str(root / ".iota.yaml"), str(root / ".iota.yml"), str(root / ".agents"),
        str(fake_home / ".iota"),
    )


def test_the_paths_are_real(tmp_path):
    (tmp_path / "gitdir").mkdir()
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / ".git").symlink_to(tmp_path / "gitdir")
    (tmp_path / "alias").symlink_to(tmp_path / "proj")
    protected = protected_paths(tmp_path / "alias")
    assert protected[:2] == (str(tmp_path / "gitdir" / "hooks"), str(tmp_path / "gitdir" / "config"))
    assert str(tmp_path / "proj" / ".iota.yaml") in protected


def test_a_path_is_protected_at_or_under_a_protected_one():
    protected = ("/p/.git/hooks", "/p/.iota.yaml")
    assert is_protected("/p/.git/hooks", protected)
    assert is_protected("/p/.git/hooks/pre-commit", protected)
    assert is_protected("/p/.IOTA.yaml", protected)
    assert not is_protected("/p/.git/hooks-old", protected)
    assert not is_protected("/p/.iota.yaml.bak", protected)
