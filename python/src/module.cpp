// w4a16._core: the nanobind extension behind the `w4a16` package (python/w4a16). Bindings
// only: array views, argument checks and error translation over the public C++ API.
//
// Errors: every w4a16::Error becomes an instance of the Python class registered for its code
// (python/w4a16/errors.py: Error(ValueError), DTypeError(TypeError, Error), ...), with the
// C++ message verbatim as str(e) and the code's name as e.code.
#include <nanobind/nanobind.h>

#include "bind.hpp"
#include "w4a16/core/error.hpp"

namespace nb = nanobind;

namespace {

// code name -> exception class, set once by w4a16/errors.py through _register_errors.
PyObject* g_error_classes = nullptr;  // a dict; a strong reference held for the process lifetime

void raise_error(const w4a16::Error& e) {
  std::string_view code = w4a16::error_code_name(e.code());
  PyObject* cls = nullptr;
  if (g_error_classes) cls = PyDict_GetItemString(g_error_classes, std::string(code).c_str());  // borrowed
  if (!cls) cls = PyExc_ValueError;
  PyObject* exc = PyObject_CallFunction(cls, "s", e.what());
  if (!exc) return;  // the constructor raised: that error stands
  PyObject* name = PyUnicode_FromStringAndSize(code.data(), static_cast<Py_ssize_t>(code.size()));
  if (name) {
    PyObject_SetAttrString(exc, "code", name);
    Py_DECREF(name);
  }
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "hybrid-w4a16 bindings (use the `w4a16` package, not this module)";

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const w4a16::Error& e) {
      raise_error(e);
    }
  });

  m.def("_register_errors", [](nb::dict classes) {
    Py_XDECREF(g_error_classes);
    g_error_classes = classes.ptr();
    Py_INCREF(g_error_classes);
  });

  w4a16::py::bind_layer(m);
  w4a16::py::bind_linear(m);
  w4a16::py::bind_io(m);
  w4a16::py::bind_moe(m);
}
