/* log.h: one line per event on stderr, with a level journald understands. */
#ifndef INFERD_LOG_H
#define INFERD_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum log_level {
	LOG_LEVEL_ERROR = 0,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

extern enum log_level log_threshold;

/* The level a name (error, warn, info, debug) stands for; -1 if unknown. */
int log_level_from_name(const char *name);

/* Set the threshold from a name (error, warn, info, debug); -1 if unknown. */
int log_set_level(const char *name);

/* Write one log line; use the LOG_* macros so disabled levels cost nothing. */
void log_write(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define LOG_AT(lvl, ...) do {					\
	if ((lvl) <= log_threshold)				\
		log_write((lvl), __VA_ARGS__);			\
} while (0)
#define LOG_ERROR(...) LOG_AT(LOG_LEVEL_ERROR, __VA_ARGS__)
#define LOG_WARN(...) LOG_AT(LOG_LEVEL_WARN, __VA_ARGS__)
#define LOG_INFO(...) LOG_AT(LOG_LEVEL_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) LOG_AT(LOG_LEVEL_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
