"""Splitting a changed path into the names of its folders and its file."""


def split_path(path):
    """The names in `path`, from the top folder down to the file."""
    return path.split("/")
