#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "picio.h"
#include "report.h"

void report_cpu_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "model name", 10)) {
            const char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ')
                    c++;
                snprintf(buf, n, "%s", c);
                buf[strcspn(buf, "\n")] = 0;
            }
            break;
        }
    fclose(f);
}

void report_utc_date(char *buf, size_t n) {
    const time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(buf, n, "%Y-%m-%d %H:%M UTC", &tmv);
}

void report_command_line(char *buf, size_t n, const char *prefix, int argc, char **argv) {
    int o = snprintf(buf, n, "%s", prefix);
    for (int i = 1; i < argc && o >= 0 && (size_t)o < n; i++)
        o += snprintf(buf + o, n - (size_t)o, strpbrk(argv[i], " \t\"'$") ? " '%s'" : " %s",
                      argv[i]);
}

void report_json_field(FILE *f, const char *key, const char *s) {
    if (!s) return;
    fprintf(f, ",\n  \"%s\": ", key);
    report_json_str(f, s);
}

void report_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

int report_write_file(const char *cmd, const char *path, void (*write)(FILE *f, void *arg),
                      void *arg) {
    char err[512];
    VioOut *o = NULL;
    if (vio_out_open(&o, path, err, sizeof(err)) < 0) return cli_error(cmd, "%s", err), -1;
    write(vio_out_stream(o), arg);
    if (vio_out_close(&o, 1, err, sizeof(err)) < 0) return cli_error(cmd, "%s", err), -1;
    return 0;
}
