"""HTML from views: Jinja2 templates with autoescaping always on (every user string is escaped)."""
