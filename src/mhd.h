/*
 * mhd.h: libmicrohttpd, loaded with dlopen by mhd.c, for the files that
 * serve HTTP (metrics.c, console_http.c): the header gives the types,
 * constants and prototypes, which type the function pointers in mhd.
 */
#ifndef MHD_H
#define MHD_H

#include "rowq.h"

#include <microhttpd.h>
#include <sys/socket.h>

/* The functions of libmicrohttpd that rowq calls, once mhd_load has run. */
struct mhd_api {
	void	*handle;
	__typeof__(MHD_start_daemon)			*start_daemon;
	__typeof__(MHD_stop_daemon)			*stop_daemon;
	__typeof__(MHD_run)				*run;
	__typeof__(MHD_get_timeout)			*get_timeout;
	__typeof__(MHD_get_daemon_info)			*get_daemon_info;
	__typeof__(MHD_get_connection_info)		*get_connection_info;
	__typeof__(MHD_lookup_connection_value)		*lookup_connection_value;
	__typeof__(MHD_get_connection_values)		*get_connection_values;
	__typeof__(MHD_create_response_from_buffer)	*create_response_from_buffer;
	__typeof__(MHD_add_response_header)		*add_response_header;
	__typeof__(MHD_queue_response)			*queue_response;
	__typeof__(MHD_destroy_response)		*destroy_response;
	__typeof__(MHD_is_feature_supported)		*is_feature_supported;
	__typeof__(MHD_suspend_connection)		*suspend_connection;
	__typeof__(MHD_resume_connection)		*resume_connection;
};

/* mhd.c (mhd_address is in rowq.h) */
extern struct mhd_api mhd;
int	 mhd_load(const char *who);
int	 mhd_epoll_fd(struct MHD_Daemon *);
void	 mhd_timers(struct MHD_Daemon *, int64_t now, int64_t *next);

/* mhd_guard.c: slow clients cut, an address held to its share. */
struct mhd_guard_conn;
struct mhd_guard {
	const char		*who;		/* "metrics", "console" */
	unsigned		 max;		/* the library's limit */
	unsigned		 per_addr;	/* of one client address */
	int64_t			 deadline_ms;	/* for a request to arrive */
	struct mhd_guard_conn	*conn;		/* max of them */
	unsigned long long	 cut_slow, cut_crowd;	/* since last logged */
	int64_t			 logged_ms;
};

void	 mhd_guard_init(struct mhd_guard *, const char *who, unsigned max,
	    unsigned per_addr, int64_t deadline_ms);
void	 mhd_guard_free(struct mhd_guard *);
void	 mhd_guard_notify(void *cls, struct MHD_Connection *, void **ctx,
	    enum MHD_ConnectionNotificationCode);
void	 mhd_guard_answering(struct MHD_Connection *);
void	 mhd_guard_completed(struct MHD_Connection *);
void	 mhd_guard_timers(struct mhd_guard *, int64_t now, int64_t *next);

#endif /* MHD_H */
