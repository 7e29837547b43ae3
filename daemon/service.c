/*
 * org.varlink.service, which every Varlink service implements: GetInfo and
 * GetInterfaceDescription (io.fatelf.Manager's text is
 * schema/io.fatelf.Manager.varlink, embedded as fatelfd_interface_text).
 */
#include <string.h>

#include "results.h"
#include "macro.h"
#include "methods.h"
#include "reply.h"

/* The standard description of org.varlink.service (the Varlink spec's
 * interface, which every service implements). */
static const char varlink_service_text[] =
	"# The Varlink Service Interface is provided by every varlink service. It\n"
	"# describes the service and the interfaces it implements.\n"
	"interface org.varlink.service\n"
	"\n"
	"# Get a list of all the interfaces a service provides and information\n"
	"# about the implementation.\n"
	"method GetInfo() -> (\n"
	"  vendor: string,\n"
	"  product: string,\n"
	"  version: string,\n"
	"  url: string,\n"
	"  interfaces: []string\n"
	")\n"
	"\n"
	"# Get the description of an interface that is implemented by this service.\n"
	"method GetInterfaceDescription(interface: string) -> (description: string)\n"
	"\n"
	"# The requested interface was not found.\n"
	"error InterfaceNotFound (interface: string)\n"
	"\n"
	"# The requested method was not found\n"
	"error MethodNotFound (method: string)\n"
	"\n"
	"# The interface defines the requested method, but the service does not\n"
	"# implement it.\n"
	"error MethodNotImplemented (method: string)\n"
	"\n"
	"# One of the passed parameters is invalid.\n"
	"error InvalidParameter (parameter: string)\n"
	"\n"
	"# Client is denied access\n"
	"error PermissionDenied ()\n"
	"\n"
	"# Method is expected to be called with 'more' set to true, but wasn't\n"
	"error ExpectedMore ()\n";

void method_get_info(conn *c, const vl_call *call, union method_params *p)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	static const char *const ifaces[] = { "org.varlink.service", FATELFD_INTERFACE };

	if (!o)
		return;
	json_set_str(o, "vendor", "fatelf");
	json_set_str(o, "product", "fatelfd");
	json_set_str(o, "version", PACKAGE_VERSION);
	json_set_str(o, "url", FATELFD_URL);
	json_set(o, "interfaces", json_strv(ifaces, ARRAY_SIZE(ifaces)));
	reply(c, o);
}

void method_get_interface_description(conn *c, const vl_call *call, union method_params *p)
{
	const char *name = p->interface.interface;
	const char *text;
	_cleanup_json_ json_object *o = NULL;

	if (strcmp(name, FATELFD_INTERFACE) == 0)
		text = fatelfd_interface_text;
	else if (strcmp(name, "org.varlink.service") == 0)
		text = varlink_service_text;
	else {
		reply_error_str(c, VL_ERROR_INTERFACE_NOT_FOUND, "interface", name);
		return;
	}
	o = json_object_new_object();
	if (!o)
		return;
	json_set_str(o, "description", text);
	reply(c, o);
}
