from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from annotation import selectors


@login_required
def home(request):
    """Who: any signed-in user. Lists datasets with their counts."""
    return render(request, "annotation/home.html", {"datasets": selectors.dataset_list_with_counts()})
