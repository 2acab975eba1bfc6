"""What a picture needs beyond numpy, imported on first use: `import viz` and `import models`
work where a package is missing (a browser tab's Pyodide has no matplotlib, threadpoolctl or
Graphviz's `dot`), and the feature that needs one says what to install."""
import importlib


def require(module, feature, install=None):
    """Import `module` (a dotted name) for `feature` (what the user asked for, in words), or raise
    ImportError: "<feature> needs <package>: pip install <package>". `install` names the pip
    package when it differs from the module's first part."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = install or module.split(".")[0]
        raise ImportError(f"{feature} needs {package}, which is not installed here: "
                          f"pip install {package}") from e
