"""torch's BuildExtension, made to build once and to check what it built.

- One build folder per Python, torch and CUDA (build/temp-...), kept between
  builds, editable and wheel builds alike (setuptools would give each pip
  call a fresh temporary folder): ninja then recompiles only the sources whose
  own text, included headers or command line changed.
- The link and the copy always run (setuptools' own staleness test ignores
  headers, so it could keep a stale library); they take seconds.
- The sources compile in the order setup.py gives them, not sorted by path
  as setuptools would: its longest first, so that a many-job build does not
  end waiting for one started late (ninja starts them in the order given).
- After the build: the compiler guard's self-check (compiler_guard.py), then
  the build record torch_reduce/_build_info.py beside the library.
"""
import copy
import os
import sys

from torch.utils.cpp_extension import BuildExtension

from build_info import write_build_info
from compiler_guard import CompilerGuard


def build_folder(root, tag):
    python = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return os.path.join(root, "build", f"temp-{python}-{tag}")


def make_build_ext(root, tag, banner, describe_build):
    """banner: what is built, printed as the build starts; describe_build() ->
    (version, with_cuda, archs, compiler, nvcc), read once the compiler is final."""

    class TorchReduceBuildExt(BuildExtension):
        def finalize_options(self):
            super().finalize_options()
            self.build_temp = build_folder(root, tag)
            self.force = True  # ninja decides what is stale

        def run(self):
            print(banner, flush=True)
            guard = CompilerGuard(os.path.join(root, "build"))
            pristine = {id(ext): copy.deepcopy(ext.extra_compile_args) for ext in self.extensions}
            while True:
                super().run()
                if all(guard.check_or_switch(self.get_ext_fullpath(ext.name)) for ext in self.extensions):
                    break
                # Again with the other compiler: a fresh compiler object, and
                # the flags as given (torch's build_extensions appends to them).
                self.compiler = None
                for ext in self.extensions:
                    ext.extra_compile_args = copy.deepcopy(pristine[id(ext)])
            self._write_build_info(describe_build())

        def build_extension(self, ext):
            compile_sources = self.compiler.compile
            given = {path: i for i, path in enumerate(ext.sources)}

            def in_given_order(sources, *args, **kwargs):
                return compile_sources(sorted(sources, key=lambda p: given.get(p, len(given))), *args, **kwargs)

            self.compiler.compile = in_given_order
            try:
                super().build_extension(ext)
            finally:
                self.compiler.compile = compile_sources

        def _write_build_info(self, description):
            targets = [os.path.join(self.build_lib, "torch_reduce", "_build_info.py")]
            if self.inplace:  # editable installs import the package from the source tree
                targets.append(os.path.join(root, "torch_reduce", "_build_info.py"))
            for path in targets:
                write_build_info(path, *description)

    return TorchReduceBuildExt
