"""The API's list pages: DRF's page-number pagination, with a page that does not exist answered in the
project's error shape (where: the ``page`` query parameter; hint: the pages that do exist)."""

from __future__ import annotations

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    def paginate_queryset(self, queryset, request, view=None):
        if request.query_params.get(self.page_query_param) == "":  # DRF would read an empty page as the first
            raise ValidationError({self.page_query_param: "give a page number (1 for the first), or leave it out"})
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound:
            size = self.get_page_size(request)
            pages = self.django_paginator_class(queryset, size).num_pages
            raise NotFound(detail={"error": {
                "message": f"page {request.query_params.get(self.page_query_param, '')[:40]!r} does not exist; "
                           f"this list has {pages} page(s)",
                "where": f"query string: {self.page_query_param}",
                "hint": f"ask for a page from 1 to {pages} ({size} rows each), or leave "
                        f"{self.page_query_param} out for the first",
            }}) from None
