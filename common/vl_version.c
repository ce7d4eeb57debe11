/*  vl_version: the version of the library that is loaded. */
#include "volley/volley.h"

#define S_STR(x)  #x
#define S_XSTR(x) S_STR(x) // expands the macro before quoting it

const char *vl_version(void)
{
    return S_XSTR(VL_VERSION_MAJOR) "." S_XSTR(VL_VERSION_MINOR) "." S_XSTR(VL_VERSION_PATCH);
}
